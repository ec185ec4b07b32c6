"""Damaged copies of the golden store: the documented outcome, strict and lenient."""

from __future__ import annotations

import os
import struct
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

from rmqarrow.commitlog import CommitLogReader, CommitLogWarning, _walk, index_records
from rmqarrow.errors import CommitLogError

F0 = "00000000000000000000"
F1 = "00000000000000065536"
F2 = "00000000000000131072"


@pytest.fixture(autouse=True, params=["compiled", "python"])
def walk_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every damage test runs with the compiled walk kernel and with the pure-Python walk."""
    if request.param == "compiled":
        assert _walk.compiled_walk() is not None, "numba is installed in the dev environment"
    else:
        monkeypatch.setattr(_walk, "compiled_walk", lambda: None)
    return str(request.param)


def _offsets(messages_tsv: list[dict[str, object]]) -> list[int]:
    return [int(str(m["physical_offset"])) for m in messages_tsv]


def _patch(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def _read(path: Path, pos: int, n: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(pos)
        return f.read(n)


def _strict(store: Path) -> tuple[list[int], CommitLogError]:
    got: list[int] = []
    with pytest.raises(CommitLogError) as info:
        for r in CommitLogReader(store).records():
            got.append(r.physical_offset)
    return got, info.value


def _lenient(store: Path) -> tuple[list[int], CommitLogReader]:
    reader = CommitLogReader(store, lenient=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [r.physical_offset for r in reader.records()]
    assert len(caught) == len(reader.problems)
    assert all(issubclass(w.category, CommitLogWarning) for w in caught)
    return got, reader


def _index_offsets(store: Path, lenient: bool) -> list[int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CommitLogWarning)
        batches = list(index_records(store, lenient=lenient, batch_rows=16))
    table = pa.Table.from_batches(batches) if batches else None
    return [] if table is None else table.column("commit_log_offset").to_pylist()


def _check_outcome(
    store: Path, offsets: list[int], bad: int, file: str, reason: str, resume: int
) -> None:
    """Strict: error naming file and offset after the good records; lenient: skip to next file."""
    got, err = _strict(store)
    assert got == [o for o in offsets if o < bad]
    assert file in str(err) and f"physical offset {bad}" in str(err)
    assert reason in str(err)
    with pytest.raises(CommitLogError, match=reason):
        _index_offsets(store, lenient=False)
    got, reader = _lenient(store)
    expected = [o for o in offsets if o < bad or o >= resume]
    assert got == expected
    assert _index_offsets(store, lenient=True) == expected
    assert [(p.path.name, p.physical_offset) for p in reader.problems] == [(file, bad)]
    assert reason in reader.problems[0].reason


def test_flipped_magic(store_copy: Path, messages_tsv: list[dict[str, object]]) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[10]
    _patch(store_copy / F0, bad + 4, b"\xda\xa3\x21\xa7")
    _check_outcome(store_copy, offsets, bad, F0, "bad magic code 0xDAA321A7", 65536)


def test_size_past_end(store_copy: Path, messages_tsv: list[dict[str, object]]) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[100]
    _patch(store_copy / F1, bad - 65536, struct.pack(">i", 70000))
    _check_outcome(store_copy, offsets, bad, F1, "runs past the end of the file", 131072)


@pytest.mark.parametrize(
    ("delta", "reason"),
    [(1, "fields add up"), (-1, "fields add up"), (-100, "fields add up"), (400, "fields add up")],
)
def test_wrong_but_plausible_size(
    store_copy: Path, messages_tsv: list[dict[str, object]], delta: int, reason: str
) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[20]
    (size,) = struct.unpack(">i", _read(store_copy / F0, bad, 4))
    _patch(store_copy / F0, bad, struct.pack(">i", size + delta))
    _check_outcome(store_copy, offsets, bad, F0, reason, 65536)


@pytest.mark.parametrize("garbage", [-5, 7, 90, -(2**31)])
def test_impossible_size(
    store_copy: Path, messages_tsv: list[dict[str, object]], garbage: int
) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[30]
    _patch(store_copy / F0, bad, struct.pack(">i", garbage))
    _check_outcome(store_copy, offsets, bad, F0, "impossible TOTALSIZE", 65536)


def test_zero_size_before_data(store_copy: Path, messages_tsv: list[dict[str, object]]) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[40]
    _patch(store_copy / F0, bad, b"\0\0\0\0")
    _check_outcome(store_copy, offsets, bad, F0, "non-zero bytes follow", 65536)


def test_zero_tail_in_an_earlier_file(
    store_copy: Path, messages_tsv: list[dict[str, object]]
) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[50]
    _patch(store_copy / F0, bad, bytes(65536 - bad))
    _check_outcome(store_copy, offsets, bad, F0, "later file follows", 65536)


def _write_end_outcome(
    store: Path, offsets: list[int], bad: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The newest file's write end: strict and lenient readers (and the index path) read
    every record before it, report no damage, and log one note naming where the log ends."""
    caplog.set_level("DEBUG", logger="rmqarrow.commitlog")  # a clean end is a debug line
    want = [o for o in offsets if o < bad]
    assert [r.physical_offset for r in CommitLogReader(store).records()] == want
    assert _index_offsets(store, lenient=False) == want
    got, reader = _lenient(store)
    assert got == want and reader.problems == []
    assert f"the log ends at physical offset {bad}" in caplog.text


def test_truncated_record(
    store_copy: Path, messages_tsv: list[dict[str, object]], caplog: pytest.LogCaptureFixture
) -> None:
    """The newest file ends inside a record: a writer that does not preallocate, in the
    middle of it (or killed there)."""
    offsets = _offsets(messages_tsv)
    bad = offsets[260]
    os.truncate(store_copy / F2, bad - 131072 + 50)
    _write_end_outcome(store_copy, offsets, bad, caplog)


def test_truncated_at_a_record_boundary(
    store_copy: Path, messages_tsv: list[dict[str, object]], caplog: pytest.LogCaptureFixture
) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[260]
    os.truncate(store_copy / F2, bad - 131072)
    _write_end_outcome(store_copy, offsets, bad, caplog)


def test_torn_last_record_of_a_preallocated_file(
    store_copy: Path, messages_tsv: list[dict[str, object]], caplog: pytest.LogCaptureFixture
) -> None:
    """A crash in the middle of copying the last record into the mapped file: its frame
    is there, its end zero, and nothing after it; the log ends before it."""
    offsets = _offsets(messages_tsv)
    last = offsets[-1]
    size = (store_copy / F2).stat().st_size
    _patch(store_copy / F2, last - 131072 + 30, bytes(size - (last - 131072 + 30)))
    _write_end_outcome(store_copy, offsets, last, caplog)


def test_empty_newest_file(
    store_copy: Path, messages_tsv: list[dict[str, object]], caplog: pytest.LogCaptureFixture
) -> None:
    """A broker creates its next file before it maps it: 0 bytes for a moment."""
    offsets = _offsets(messages_tsv)
    (store_copy / "00000000000000196608").write_bytes(b"")
    caplog.set_level("INFO", logger="rmqarrow.commitlog")
    assert [r.physical_offset for r in CommitLogReader(store_copy).records()] == offsets
    assert _index_offsets(store_copy, lenient=False) == offsets
    assert "the newest file is empty" in caplog.text


def test_next_file_created_ahead_of_time(
    store_copy: Path, messages_tsv: list[dict[str, object]]
) -> None:
    """A broker's allocator creates the next file, full size and zero, while the current
    one still fills: the current one is the log's end, its zero tail no damage."""
    offsets = _offsets(messages_tsv)
    (store_copy / "00000000000000196608").write_bytes(bytes(65536))
    assert [r.physical_offset for r in CommitLogReader(store_copy).records()] == offsets
    got, reader = _lenient(store_copy)
    assert got == offsets and reader.problems == []


def test_damage_in_the_newest_file_with_records_after_it(
    store_copy: Path, messages_tsv: list[dict[str, object]]
) -> None:
    """A bad record that later records follow is damage, in the newest file too."""
    offsets = _offsets(messages_tsv)
    bad = offsets[260]
    _patch(store_copy / F2, bad - 131072 + 4, b"\xda\xa3\x21\xa7")
    _check_outcome(store_copy, offsets, bad, F2, "bad magic code 0xDAA321A7", 1 << 62)


def test_an_empty_older_file_is_damage(
    store_copy: Path, messages_tsv: list[dict[str, object]]
) -> None:
    offsets = _offsets(messages_tsv)
    os.truncate(store_copy / F1, 0)
    _check_outcome(store_copy, offsets, 65536, F1, "file is truncated", 131072)


def test_truncated_inside_the_first_8_bytes(
    store_copy: Path, messages_tsv: list[dict[str, object]]
) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[120]
    os.truncate(store_copy / F1, bad - 65536 + 6)
    _check_outcome(store_copy, offsets, bad, F1, "file is truncated", 131072)


def test_blank_record_with_wrong_size(
    store_copy: Path, messages_tsv: list[dict[str, object]]
) -> None:
    offsets = _offsets(messages_tsv)
    _patch(store_copy / F0, 65528, struct.pack(">i", 16))
    _check_outcome(store_copy, offsets, 65528, F0, "blank record has TOTALSIZE 16", 65536)


def test_wrong_physical_offset(store_copy: Path, messages_tsv: list[dict[str, object]]) -> None:
    offsets = _offsets(messages_tsv)
    bad = offsets[5]
    _patch(store_copy / F0, bad + 28, struct.pack(">q", bad + 1))
    _check_outcome(store_copy, offsets, bad, F0, f"stored PHYSICALOFFSET {bad + 1}", 65536)


def test_gap_between_files(store_copy: Path, messages_tsv: list[dict[str, object]]) -> None:
    offsets = _offsets(messages_tsv)
    (store_copy / F2).rename(store_copy / "00000000000000196608")
    with pytest.raises(CommitLogError, match="file starts at 196608, expected 131072"):
        list(CommitLogReader(store_copy).records())
    got, reader = _lenient(store_copy)
    # the records of the misnamed file fail the physical offset check
    assert got == [o for o in offsets if o < 131072]
    assert [p.physical_offset for p in reader.problems] == [196608, 196608]


def test_read_record_refuses_non_records(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    reader = CommitLogReader(golden_commitlog)
    off = _offsets(messages_tsv)[3]
    with pytest.raises(CommitLogError, match=f"physical offset {off + 1}"):
        reader.read_record(off + 1)
    with pytest.raises(CommitLogError, match="no message record there"):
        reader.read_record(65528)
    with pytest.raises(CommitLogError, match="outside the log"):
        reader.read_record(10**9)


def test_missing_directory(tmp_path: Path) -> None:
    from rmqarrow.errors import StoreNotFoundError

    with pytest.raises(StoreNotFoundError):
        CommitLogReader(tmp_path / "nope")


def test_empty_directory(tmp_path: Path) -> None:
    assert list(CommitLogReader(tmp_path).records()) == []


def test_an_error_with_views_of_the_map_alive_stays_that_error(tmp_path: Path) -> None:
    """A decoder's array over the mapped file, still referenced while its error
    propagates, must not turn the error into mmap's BufferError on close."""
    import numpy as np

    from rmqarrow.commitlog._files import map_file

    path = tmp_path / F0
    path.write_bytes(b"\0" * 4096)
    held: list[np.ndarray] = []
    with pytest.raises(CommitLogError, match="damaged here"), map_file(path, 4096) as buf:
        held.append(np.frombuffer(buf, dtype=np.uint8))
        raise CommitLogError("damaged here")
    assert held[0].size == 4096  # the view outlives the block, still readable
