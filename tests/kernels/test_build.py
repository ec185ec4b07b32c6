"""IndexService.build_index_batch yields exactly the files one-by-one build_index yields."""

from __future__ import annotations

import datetime as _dt
import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow import IndexService, InvalidKeyError, InvalidValueError, MessageRecord
from rmqarrow.format.records import RECORD_COLUMNS, index_keys
from rmqarrow.kernels.expand import expand_keys

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
T0 = 1_700_000_000_000
SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("keys", pa.string()),
        ("uniq_key", pa.string()),
        ("commit_log_offset", pa.int64()),
        ("store_timestamp", pa.int64()),
        ("sys_flag", pa.int32()),
    ]
)


def table_of(records: list[MessageRecord]) -> pa.Table:
    cols = {name: [getattr(r, name) for r in records] for name in RECORD_COLUMNS}
    return pa.table(cols, schema=SCHEMA)


def service(d: Path, slots: int, index_num: int) -> IndexService:
    return IndexService(d, slots, index_num, clock=lambda: T0, tz=_dt.UTC)


def store_bytes(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.exists() else {}


RECORD = st.builds(
    MessageRecord,
    topic=st.sampled_from(["T", "t#x", "日本", ""]),
    keys=st.one_of(
        st.none(),
        st.sampled_from(["", " ", "a", "Aa BB", " a  b ", "k k", "😀 é"]),
        st.text(alphabet="ab ", max_size=6),
    ),
    uniq_key=st.one_of(st.none(), st.sampled_from(["", "U1", "BB"])),
    commit_log_offset=st.one_of(st.integers(-3, 40), st.sampled_from([LONG_MIN, LONG_MAX])),
    store_timestamp=st.one_of(
        st.integers(T0 - 5000, T0 + 5000), st.sampled_from([0, -1, LONG_MIN, LONG_MAX])
    ),
    sys_flag=st.sampled_from([0, 4, 8, 12, 13, 0x10C]),
)


@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    slots=st.integers(1, 4),
    index_num=st.integers(2, 7),
    before=st.lists(RECORD, max_size=5),
    batch=st.lists(RECORD, max_size=25),
    cuts=st.lists(st.integers(0, 25), max_size=3),
    monotone=st.booleans(),
)
def test_build_index_batch_equals_build_index(
    slots: int,
    index_num: int,
    before: list[MessageRecord],
    batch: list[MessageRecord],
    cuts: list[int],
    monotone: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    if monotone:  # the common case: offsets only grow
        batch = [
            MessageRecord(r.topic, r.keys, r.uniq_key, 10 * i, r.store_timestamp, r.sys_flag)
            for i, r in enumerate(batch)
        ]
    d = tmp_path_factory.mktemp("build")
    seq, bulk = service(d / "seq", slots, index_num), service(d / "bulk", slots, index_num)
    with seq, bulk:
        for s in (seq, bulk):
            s.build_index_many(before)
        seq.build_index_many(batch)
        bounds = [0, *sorted(c for c in cuts if c <= len(batch)), len(batch)]
        for a, b in itertools.pairwise(bounds):
            bulk.build_index_batch(table_of(batch[a:b]))
        assert [f.name for f in bulk.files] == [f.name for f in seq.files]
        for fs, fb in zip(seq.files, bulk.files, strict=True):
            assert (fb.index_count, fb.end_phy_offset, fb.end_timestamp) == (
                fs.index_count,
                fs.end_phy_offset,
                fs.end_timestamp,
            )
    assert store_bytes(d / "bulk") == store_bytes(d / "seq")


def test_roll_timing_full_file_gets_successor_on_any_record(tmp_path: Path) -> None:
    """A full newest file rolls at the start of the next record, even a rollback."""
    fill = [MessageRecord("T", "a b", None, 1, T0)]  # index_num 3 holds exactly 2 keys
    for name, extra in (
        ("keyless", MessageRecord("T", None, None, 2, T0)),
        ("rollback", MessageRecord("T", "c", None, 3, T0, 12)),
        ("guarded", MessageRecord("T", "c", None, 0, T0)),
    ):
        seq, bulk = service(tmp_path / name / "s", 2, 3), service(tmp_path / name / "b", 2, 3)
        with seq, bulk:
            seq.build_index_many([*fill, extra])
            bulk.build_index_batch(table_of(fill))
            assert len(bulk.files) == 1
            bulk.build_index_batch(table_of([extra]))
            assert len(bulk.files) == len(seq.files) == 2
        assert store_bytes(tmp_path / name / "b") == store_bytes(tmp_path / name / "s")


def test_record_with_more_keys_than_a_file_rolls_repeatedly(tmp_path: Path) -> None:
    rec = [MessageRecord("T", " ".join(f"k{i}" for i in range(11)), "u", 5, T0 + 1)]
    seq, bulk = service(tmp_path / "s", 2, 3), service(tmp_path / "b", 2, 3)
    with seq, bulk:
        seq.build_index_many(rec)
        bulk.build_index_batch(table_of(rec))
        assert len(bulk.files) == 6
    assert store_bytes(tmp_path / "b") == store_bytes(tmp_path / "s")


def test_expand_keys_equals_index_keys() -> None:
    records = [
        MessageRecord("T", " a  b ", "u", 1, 1),
        MessageRecord("T", None, "", 2, 2),
        MessageRecord("X", "k k", None, 3, 3, 12),
        MessageRecord("日本", "😀", "u2", 4, 4),
        MessageRecord("T", "", None, 5, 5),
    ]
    table = table_of(records)
    skip = pa.array([r.sys_flag & 0xC == 0xC for r in records]).to_numpy(zero_copy_only=False)
    got = expand_keys(table, skip)
    expected = [k for r, s in zip(records, skip, strict=True) if not s for k in index_keys(r)]
    assert got.keys.to_pylist() == expected
    assert got.counts.tolist() == [3, 0, 0, 2, 0]
    assert got.record.tolist() == [0, 0, 0, 3, 3]


def test_optional_columns_and_record_batches(tmp_path: Path) -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": ["T", "T"],
            "keys": ["a b", None],
            "commit_log_offset": [1, 2],
            "store_timestamp": [T0, T0 + 1],
        }
    )
    seq, bulk = service(tmp_path / "s", 4, 16), service(tmp_path / "b", 4, 16)
    with seq, bulk:
        seq.build_index_many(
            [MessageRecord("T", "a b", None, 1, T0), MessageRecord("T", None, None, 2, T0 + 1)]
        )
        bulk.build_index_batch(batch)
        bulk.build_index_batch(batch.slice(0, 0))
    assert store_bytes(tmp_path / "b") == store_bytes(tmp_path / "s")


def test_bad_record_tables_are_refused(tmp_path: Path) -> None:
    with service(tmp_path / "s", 4, 16) as s:
        with pytest.raises(InvalidValueError, match="commit_log_offset"):
            s.build_index_batch(pa.table({"topic": ["T"], "store_timestamp": [1]}))
        with pytest.raises(InvalidValueError, match="nulls"):
            s.build_index_batch(
                pa.table(
                    {
                        "topic": ["T"],
                        "store_timestamp": [1],
                        "commit_log_offset": pa.array([None], pa.int64()),
                    }
                )
            )
        with pytest.raises(InvalidKeyError, match="topic"):
            s.build_index_batch(
                pa.table(
                    {
                        "topic": pa.array([None], pa.string()),
                        "keys": ["a"],
                        "commit_log_offset": [1],
                        "store_timestamp": [1],
                    }
                )
            )
        with pytest.raises(InvalidKeyError, match="strings"):
            s.build_index_batch(
                pa.table({"topic": [1], "commit_log_offset": [1], "store_timestamp": [1]})
            )
        assert s.files == [] or all(f.entry_count == 0 for f in s.files)
