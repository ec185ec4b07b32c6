"""Tag entries (``topic#T#tags``), the rule of RocketMQ 5.4 and later, in every path.

The one-by-one service (:func:`rmqarrow.format.records.index_keys`), the vectorized
expansion and the CommitLog build all put the same keys in the same order: the unique key,
the KEYS tokens, then the tags whole; none for a rollback or empty tags.  Which release puts
them is said by :func:`indexes_tags`.  The brokers themselves are compared in
``tests/rocketmq``.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from cli_run import one_error, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rmqarrow
from rmqarrow import IndexService, InvalidValueError, MessageRecord
from rmqarrow.commitlog import CommitLogWriter, Message, index_records
from rmqarrow.format.records import (
    RECORD_COLUMNS,
    index_keys,
    indexes_tags,
    query_index_key,
    tag_index_key,
)
from rmqarrow.kernels.expand import expand_keys

T0 = 1_700_000_000_000


def test_which_releases_index_tags() -> None:
    assert [indexes_tags(v) for v in ("4.9.7", "5.3", "5.3.3", "5.4", "5.4.0", "5.5.0")] == [
        False,
        False,
        False,
        True,
        True,
        True,
    ]
    assert indexes_tags("6.0") and indexes_tags(" 5.10.1 ")
    for bad in ("", "5", "five", "5.4-SNAPSHOT", "v5.4"):
        with pytest.raises(InvalidValueError, match=r"like 5\.4 or 4\.9\.7"):
            indexes_tags(bad)


def test_query_index_keys() -> None:
    assert tag_index_key("T", "a||b") == "T#T#a||b"
    assert [query_index_key("T", "k", t) for t in (None, "K", "U", "T")] == [
        "T#k",
        "T#k",
        "T#k",
        "T#T#k",
    ]
    with pytest.raises(InvalidValueError, match=r"K \(keys\), U \(unique keys\) or T"):
        query_index_key("T", "k", "t")


def test_index_keys_put_the_tags_last_and_whole() -> None:
    r = MessageRecord("T", "a b", "u", 1, T0, 0, "x||y")
    assert index_keys(r) == ["T#u", "T#a", "T#b", "T#T#x||y"]
    assert index_keys(MessageRecord("T", None, None, 1, T0, 0, "")) == []
    assert index_keys(MessageRecord("T", None, None, 1, T0, 0, "g")) == ["T#T#g"]


TAGGED = st.builds(
    MessageRecord,
    topic=st.sampled_from(["T", "日本"]),
    keys=st.one_of(st.none(), st.sampled_from(["", "a", " a  b ", "k k"])),
    uniq_key=st.one_of(st.none(), st.sampled_from(["", "U1"])),
    commit_log_offset=st.integers(0, 40),
    store_timestamp=st.integers(T0, T0 + 5000),
    sys_flag=st.sampled_from([0, 4, 8, 12]),
    tags=st.one_of(st.none(), st.sampled_from(["", "TagA", "a||b", "é"])),
)


def _table(records: list[MessageRecord]) -> pa.Table:
    cols = {name: [getattr(r, name) for r in records] for name in (*RECORD_COLUMNS, "tags")}
    return pa.table(cols)


def _service(d: Path) -> IndexService:
    return IndexService(d, 3, 6, clock=lambda: T0, tz=_dt.UTC)


def _bytes(d: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(d.iterdir())]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=st.lists(TAGGED, min_size=1, max_size=25))
def test_bulk_build_with_tags_equals_one_by_one(
    batch: list[MessageRecord], tmp_path_factory: pytest.TempPathFactory
) -> None:
    batch = [
        MessageRecord(r.topic, r.keys, r.uniq_key, 10 * i, r.store_timestamp, r.sys_flag, r.tags)
        for i, r in enumerate(batch)
    ]
    expanded = expand_keys(_table(batch))
    assert expanded.keys.to_pylist() == [k for r in batch for k in index_keys(r)]
    d = tmp_path_factory.mktemp("tags")
    with _service(d / "seq") as seq, _service(d / "bulk") as bulk:
        seq.build_index_many(batch)
        bulk.build_index_batch(_table(batch))
    assert _bytes(d / "bulk") == _bytes(d / "seq")


def _props(**values: str) -> bytes:
    return "".join(f"{k}\x01{v}\x02" for k, v in values.items()).encode()


@pytest.fixture
def tagged_log(tmp_path: Path) -> tuple[Path, list[MessageRecord]]:
    """A CommitLog with tagged, untagged, rolled-back, prepared and delayed messages, and
    the records the broker's dispatch would see for each."""
    log = tmp_path / "store" / "commitlog"
    specs = [
        ("TopicA", {"KEYS": "k1 k2", "UNIQ_KEY": "U0", "TAGS": "TagA"}, 0),
        ("TopicA", {"UNIQ_KEY": "U1", "TAGS": "a||b"}, 0),
        ("TopicA", {"UNIQ_KEY": "U2"}, 0),
        ("TopicA", {"UNIQ_KEY": "U3", "TAGS": ""}, 0),
        ("TopicA", {"KEYS": "p", "UNIQ_KEY": "U4", "TAGS": "TagA"}, 4),  # prepared
        ("TopicA", {"KEYS": "r", "UNIQ_KEY": "U5", "TAGS": "TagA"}, 12),  # rollback
        ("SCHEDULE_TOPIC_XXXX", {"UNIQ_KEY": "U6", "TAGS": "late", "REAL_TOPIC": "TopicA"}, 0),
        ("TopicB", {"KEYS": "日本", "UNIQ_KEY": "U7", "TAGS": "é"}, 0),
    ] * 3
    records = []
    with CommitLogWriter(log, mapped_file_size=4096) as w:
        for i, (topic, props, flag) in enumerate(specs):
            offset = w.append(
                Message(
                    topic=topic,
                    body=b"x" * 40,
                    properties_raw=_props(**props),
                    sys_flag=flag,
                    store_timestamp=T0 + 1000 * i,
                    born_host="10.0.0.1:1",
                    store_host="10.0.0.2:10911",
                )
            ).physical_offset
            records.append(
                MessageRecord(
                    topic,
                    props.get("KEYS"),
                    props.get("UNIQ_KEY"),
                    offset,
                    T0 + 1000 * i,
                    flag,
                    props.get("TAGS"),
                )
            )
    return log, records


def test_index_records_carry_the_tags_on_request(
    tagged_log: tuple[Path, list[MessageRecord]],
) -> None:
    log, records = tagged_log
    plain = pa.Table.from_batches(list(index_records(log)))
    tagged = pa.Table.from_batches(list(index_records(log, tags=True, batch_rows=5)))
    assert "tags" not in plain.column_names
    assert tagged.drop_columns(["tags"]).equals(plain)
    assert tagged.column("tags").to_pylist() == [r.tags or None for r in records]


def test_build_follows_the_release_named(
    tagged_log: tuple[Path, list[MessageRecord]], tmp_path: Path
) -> None:
    """``rocketmq_version="5.4"`` writes what the one-by-one service writes with the tags;
    the default writes what it writes without them."""
    log, records = tagged_log
    for version, with_tags in (("5.4.0", True), (None, False)):
        name = version or "default"
        kwargs = {} if version is None else {"rocketmq_version": version}
        rmqarrow.build(tmp_path / name, commitlog=log, hash_slot_num=3, index_num=9, **kwargs)
        expected = tmp_path / f"{name}-expected"
        with IndexService(expected, 3, 9) as service:
            service.build_index_many(
                [r if with_tags else MessageRecord(*[*vars(r).values()][:6]) for r in records]
            )
        assert _bytes(tmp_path / name) == _bytes(expected)
    with rmqarrow.open(tmp_path / "5.4.0", hash_slot_num=3, index_num=9) as store:
        tag_a = [r.commit_log_offset for r in records if r.tags == "TagA" and r.sys_flag != 12]
        assert store.query("TopicA", "TagA", index_type="T") == sorted(tag_a, reverse=True)
        assert store.query("TopicA", "TagA", index_type="T", engine="duckdb") == sorted(
            tag_a, reverse=True
        )
        assert store.query("SCHEDULE_TOPIC_XXXX", "late", index_type="T") != []
        assert store.query("TopicA", "a||b", index_type="T") != []
        assert store.query("TopicA", "a", index_type="T") == []
    with rmqarrow.open(tmp_path / "default", hash_slot_num=3, index_num=9) as store:
        assert store.query("TopicA", "TagA", index_type="T") == []


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    status, _, err = run(capsys, *args)
    assert status in (1, 2), err
    return one_error(err)


def test_cli_rules_and_types(
    tagged_log: tuple[Path, list[MessageRecord]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log, records = tagged_log
    out_dir = tmp_path / "built"
    status, _, err = run(
        capsys, "build", str(out_dir), "--from-commitlog", str(log), "--rocketmq-version", "5.5"
    )
    assert status == 0, err
    status, out, err = run(
        capsys, "query", str(out_dir), "--topic", "TopicB", "--key", "é", "--type", "T"
    )
    assert status == 0, err
    assert "3 offsets for 'TopicB#T#é'" in out
    status, out, err = run(capsys, "query", str(out_dir), "--key", "TopicB#é", "--type", "T")
    assert status == 0 and "3 offsets for 'TopicB#T#é'" in out, err
    # --resolve with --type T keeps the messages whose topic and whole TAGS match
    status, out, err = run(
        capsys, "query", str(out_dir), "--key", "TopicB#é", "--type", "T", "--resolve", str(log),
        "--json",
    )  # fmt: skip
    assert status == 0, err
    doc = json.loads(out)
    tagged_b = [r.commit_log_offset for r in records if (r.topic, r.tags) == ("TopicB", "é")]
    assert (doc["key"], sorted(doc["phy_offsets"])) == ("TopicB#T#é", sorted(tagged_b))
    assert doc["dropped_false_positives"] == 0
    assert "no '#'" in _error(capsys, "query", str(out_dir), "--key", "é", "--type", "T")
    assert "K (keys), U" in _error(
        capsys, "query", str(out_dir), "--topic", "TopicB", "--key", "é", "--type", "X"
    )
    assert "like 5.4 or 4.9.7" in _error(
        capsys, "build", str(tmp_path / "b2"), "--from-commitlog", str(log),
        "--rocketmq-version", "latest",
    )  # fmt: skip
    assert not (tmp_path / "b2").exists()
    parquet = tmp_path / "records.parquet"
    import pyarrow.parquet as pq

    pq.write_table(_table(records).select(list(RECORD_COLUMNS)), parquet)
    assert "no tags column" in _error(
        capsys, "build", str(tmp_path / "b3"), "--from", str(parquet), "--rocketmq-version", "5.4"
    )
