"""The Python front door refuses the input mistakes the command line refuses: store times
in epoch seconds, and a scan of a column the table does not have, each in one line of the
project's own error naming what was given and what to give."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from generated_store import GeneratedStore, build_generated
from golden_data import golden_set
from tiered_golden_data import TieredSet

import rmqarrow
from rmqarrow import Query
from rmqarrow.errors import InvalidValueError, RmqArrowError
from rmqarrow.format.java import JAVA_LONG_MAX, JAVA_LONG_MIN
from rmqarrow.store import TieredStore

BASIC = TieredSet("tiered_basic")


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("hygiene") / "gen", messages=400)


@pytest.fixture(scope="module")
def dataset(gen: GeneratedStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hygiene-ds") / "ds"
    with rmqarrow.open(gen.store, hash_slot_num=gen.hash_slot_num, index_num=gen.index_num) as s:
        s.export(out)
    return out


def _first_record(gen: GeneratedStore) -> tuple[str, str, int, int]:
    """Topic, a key, offset and store time (ms) of the first record with KEYS."""
    for row in gen.records.to_pylist():
        if row["keys"]:
            return (
                row["topic"],
                row["keys"].split()[0],
                row["commit_log_offset"],
                row["store_timestamp"],
            )
    raise AssertionError("the generated stream has no record with KEYS")


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text, text
    return text


def test_query_refuses_epoch_seconds_as_the_cli_does(gen: GeneratedStore) -> None:
    topic, key, offset, ms = _first_record(gen)
    seconds = ms // 1000
    with rmqarrow.open(gen.store, hash_slot_num=gen.hash_slot_num, index_num=gen.index_num) as s:
        with pytest.raises(InvalidValueError) as caught:
            s.query(topic, key, begin=seconds)
        line = _one_line(caught.value)
        assert line.startswith(f"begin {seconds}:") and "epoch seconds" in line
        assert f"pass {seconds * 1000}" in line
        with pytest.raises(InvalidValueError, match=rf"^end {seconds + 60}: .*epoch seconds"):
            s.query(topic, key, end=seconds + 60)
        # the value the message suggests answers: the record is in its second
        suggested = s.query(topic, key, begin=seconds * 1000 - 1000, end=seconds * 1000 + 1000)
        assert offset in suggested
        assert offset in s.query(topic, key)


def test_query_many_and_answers_name_the_query(gen: GeneratedStore, dataset: Path) -> None:
    topic, key, offset, ms = _first_record(gen)
    full = f"{topic}#{key}"
    seconds = ms // 1000
    for path in (gen.store, dataset):
        with rmqarrow.open(path, hash_slot_num=gen.hash_slot_num, index_num=gen.index_num) as s:
            with pytest.raises(InvalidValueError, match=r"^query 1: begin \d+: .*epoch seconds"):
                s.query_many([(full, 5), (full, 5, seconds, JAVA_LONG_MAX)])
            with pytest.raises(InvalidValueError, match=r"^query 0: end \d+: .*epoch seconds"):
                s.answers([Query(full, 5, 0, seconds)])
            hits = s.query_many([(full, 5, ms - 1000, ms + 1000)])
            assert offset in hits["phy_offset"].to_pylist()


def test_open_ranges_and_small_millisecond_times_still_pass() -> None:
    # 0, the Java long bounds and times of the first day (the golden "time" set uses
    # 1000..2000 ms) are milliseconds no one mistakes for seconds
    g = golden_set("time")
    assert any(q.begin == JAVA_LONG_MIN for q in g.queries)
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as s:
        assert s.answers(g.queries) == g.expected
        assert s.query_many(g.queries).num_rows == sum(len(a) for a in g.expected)


def test_tiered_query_refuses_epoch_seconds() -> None:
    q = BASIC.queries[0]
    with rmqarrow.open(
        BASIC.dir / "unsealed.bin", hash_slot_num=BASIC.hash_slot_num, index_num=BASIC.index_num
    ) as s:
        assert isinstance(s, TieredStore)
        assert s.query(q.topic, q.key, begin=q.begin, end=q.end) is not None
        with pytest.raises(InvalidValueError, match=r"^begin 1700000000: .*pass 1700000000000"):
            s.query(q.topic, q.key, begin=1_700_000_000)
        with pytest.raises(InvalidValueError, match=r"^query 0: end 1700000000: "):
            s.query_many([(q.topic, q.key, q.max_count, 0, 1_700_000_000)])


def test_scan_names_an_unknown_column_and_the_tables_columns(
    gen: GeneratedStore, dataset: Path
) -> None:
    for path in (gen.store, dataset):
        with rmqarrow.open(path, hash_slot_num=gen.hash_slot_num, index_num=gen.index_num) as s:
            columns = s.scan("entries").schema.names
            with pytest.raises(InvalidValueError) as caught:
                s.scan("entries", columns=["key_hash", "nope"])
            assert not isinstance(caught.value, pa.ArrowInvalid)
            line = _one_line(caught.value)
            assert "unknown column 'nope' in table 'entries'" in line
            assert line.endswith("choose from " + ", ".join(columns))
            with pytest.raises(RmqArrowError, match="unknown columns 'a', 'b' in table 'files'"):
                s.scan("files", columns=["a", "file_name", "b"])
            got = s.scan("entries", columns=columns[::-1]).read_all()
            assert got.column_names == columns[::-1] and got.num_rows > 0


def test_tiered_scan_names_an_unknown_column() -> None:
    with rmqarrow.open(
        BASIC.dir / "unsealed.bin", hash_slot_num=BASIC.hash_slot_num, index_num=BASIC.index_num
    ) as s:
        columns = s.scan("tiered_items").schema.names
        with pytest.raises(InvalidValueError, match="unknown column 'phy_offset'") as caught:
            s.scan("tiered_items", columns=["phy_offset"])
        assert str(caught.value).endswith("choose from " + ", ".join(columns))
        assert s.scan("tiered_items", columns=["offset"]).read_all().num_rows > 0


def test_build_refuses_what_the_command_line_refuses(tmp_path: Path) -> None:
    """The same rules for a Python caller of ``rmqarrow.build`` as for ``rmqarrow build``."""
    from rmqarrow.errors import UsageError

    log = tmp_path / "commitlog"
    log.mkdir()
    records = tmp_path / "records.csv"
    records.write_text("topic,keys,uniq_key,commit_log_offset,store_timestamp,sys_flag\n")
    cases = [
        ({"commitlog": log, "start_offset": -7}, "start_offset must be a CommitLog offset >= 0"),
        ({"records": records, "start_offset": 352}, "start_offset goes with commitlog"),
        (
            {"commitlog": log, "start_offset": 352, "start_timestamp": 1},
            "give one",
        ),
        (
            {"commitlog": log, "checkpoint": tmp_path / "nowhere" / "checkpoint"},
            "not an existing directory",
        ),
    ]
    for kwargs, message in cases:
        with pytest.raises(UsageError, match=message):
            rmqarrow.build(tmp_path / "store", **kwargs)
    assert not (tmp_path / "store").exists() and not (tmp_path / "nowhere").exists()
