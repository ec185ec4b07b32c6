"""Inputs refused with the project's errors, naming what is wrong: Python API types and
closed objects, keys holding bytes that are not UTF-8 (every engine alike), input records
no broker writes (row named)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from rmqarrow.errors import ClosedIndexError, InvalidKeyError, InvalidValueError
from rmqarrow.format.queries import Query
from rmqarrow.format.records import MessageRecord
from rmqarrow.index.build import check_record_values
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService

T0 = 1_700_000_000_000
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
#: a key as it arrives from argv when the terminal sent byte 0xFF (surrogateescape)
RAW_KEY = os.fsdecode(b"T#order-\xff1")


def _service(path: Path) -> IndexService:
    s = IndexService(path, 16, 64)
    s.build_index(MessageRecord("T", "order-1", "u1", 100, T0))
    return s


def test_closed_service_refuses_every_call(tmp_path: Path) -> None:
    s = _service(tmp_path / "s")
    assert s.query_offset("T", "order-1", 5).phy_offsets == [100]
    s.close()
    for call in (
        lambda: s.query_offset("T", "order-1", 5),
        lambda: s.lookup(Query("T#order-1", 5)),
        lambda: s.query_offsets(["T#order-1"], 5),
        lambda: s.build_index(MessageRecord("T", "k", None, 200, T0)),
    ):
        with pytest.raises(ClosedIndexError, match="closed"):
            call()
    s.load()  # loading opens it again
    assert s.query_offset("T", "order-1", 5).phy_offsets == [100]
    s.close()


@pytest.mark.parametrize("writable", ["no", 1, None, "False"])
def test_open_writable_must_be_a_bool(tmp_path: Path, writable: object) -> None:
    _service(tmp_path / "s").close()
    (path,) = (tmp_path / "s").iterdir()
    before = path.read_bytes()
    with pytest.raises(InvalidValueError, match="writable must be True or False"):
        IndexFile.open(path, 16, 64, writable=writable)  # type: ignore[arg-type]
    assert path.read_bytes() == before


@pytest.mark.parametrize("max_num", [5.5, True, "3", None])
def test_max_num_must_be_an_int(tmp_path: Path, max_num: object) -> None:
    with _service(tmp_path / "s") as s:
        with pytest.raises(InvalidValueError, match="max_num must be an int"):
            s.query_offset("T", "order-1", max_num)  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="max_num must be an int"):
            s.lookup(Query("T#order-1", max_num))  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="max_num must be an int"):
            s.files[0].select_phy_offsets("T#order-1", max_num)  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="begin must be an int"):
            s.query_offset("T", "order-1", 5, 1.5)  # type: ignore[arg-type]


def test_non_utf8_key_refused_natively(tmp_path: Path) -> None:
    with _service(tmp_path / "s") as s:
        for call in (
            lambda: s.query_offset("T", RAW_KEY[2:], 5),
            lambda: s.lookup(Query(RAW_KEY, 5)),
            lambda: s.query_offsets([RAW_KEY], 5),
            lambda: s.files[0].select_phy_offsets(RAW_KEY, 5),
        ):
            with pytest.raises(
                InvalidKeyError, match=r"byte 0xFF at byte [68], which is not UTF-8"
            ):
                call()
        # other lone surrogates are Java chars: hashed as Java does, not refused
        assert s.lookup(Query("T#\ud800", 5)) == []


def test_non_utf8_key_refused_by_duckdb() -> None:
    from rmqarrow.converters.duckdb import sql as duckdb_sql

    with pytest.raises(InvalidKeyError, match=r"b'T#order-\\xff1' holds the byte 0xFF"):
        duckdb_sql.answer_queries(
            GOLDEN / "basic", [Query(RAW_KEY, 5)], hash_slot_num=100, index_num=400
        )


def _records(offsets: list[int], stamps: list[int]) -> pa.Table:
    return pa.table(
        {
            "topic": ["T"] * len(offsets),
            "keys": ["k"] * len(offsets),
            "commit_log_offset": offsets,
            "store_timestamp": stamps,
        }
    )


def test_negative_offset_refused_with_its_row() -> None:
    with pytest.raises(
        InvalidValueError, match=r"^in\.csv: row 12: commit_log_offset -5 is negative"
    ):
        check_record_values(_records([10, -5], [T0, T0]), first_row=11, source="in.csv")


def test_epoch_seconds_refused_with_row_and_fix() -> None:
    with pytest.raises(InvalidValueError) as info:
        check_record_values(_records([1, 2, 3], [T0, T0, 1_700_000_002]), first_row=1)
    text = str(info.value)
    assert "row 3: store_timestamp 1700000002 looks like epoch seconds" in text
    assert "while row 1 holds milliseconds" in text and "multiply the seconds by 1000" in text
    assert "\n" not in text
    with pytest.raises(InvalidValueError, match=r"row 1: .*2023-11-14T22:13:20Z as seconds"):
        check_record_values(_records([1, 2], [1_700_000_000, 1_700_000_001]))
    with pytest.raises(InvalidValueError, match=r"row 2: store_timestamp -1 is before 1970"):
        check_record_values(_records([1, 2], [T0, -1]))
    check_record_values(_records([0, 2], [T0, 0]))  # RocketMQ's 0 and small test times pass
    check_record_values(_records([0, 2], [5, 10]))


def test_refeeding_records_reindexes_only_the_boundary_record(tmp_path: Path) -> None:
    """RocketMQ's guard skips a record whose offset is *below* the newest file's end
    offset: fed again, every record is skipped except the last one indexed (its offset
    equals the end), whose keys are put once more; what the build help must say."""
    recs = [MessageRecord("T", f"k{i} x{i}", f"u{i}", 100 * i, T0 + i) for i in range(10)]
    table = pa.table(
        {
            "topic": [r.topic for r in recs],
            "keys": [r.keys for r in recs],
            "uniq_key": [r.uniq_key for r in recs],
            "commit_log_offset": [r.commit_log_offset for r in recs],
            "store_timestamp": [r.store_timestamp for r in recs],
        }
    )
    with IndexService(tmp_path / "s", 16, 64) as s:
        s.build_index_batch(table)
        once = sum(f.entry_count for f in s.files)
        s.build_index_batch(table)
        assert sum(f.entry_count for f in s.files) == once + 3  # u9, k9, x9 again
        assert s.query_offset("T", "k9", 10).phy_offsets == [900, 900]
        assert s.query_offset("T", "k8", 10).phy_offsets == [800]
