"""``check`` notes a header end timestamp that the file's newest item contradicts.

RocketMQ's recovery reopens a local tiered index file with the begin timestamp as its end
timestamp (rule 12), and the upload keeps it.  Queries never read it, so the file is not
unhealthy; but RocketMQ expires the uploaded segment by it, which an operator should know.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import run
from hypothesis import given
from hypothesis import strategies as st

from rmqarrow.format.layout import GeometryHint
from rmqarrow.tiered import AppendResult, TieredIndexFile, check_tiered
from rmqarrow.tiered._rules import store_time_bounds, time_diff

S, N, BEGIN = 8, 32, 1_732_000_000_000


def _file(tmp_path: Path, *store_times: int) -> Path:
    path = tmp_path / "tiered_index_file" / str(BEGIN)
    path.parent.mkdir(parents=True, exist_ok=True)
    with TieredIndexFile.create(path, BEGIN, S, N) as f:
        for i, t in enumerate(store_times):
            assert f.put_key("T", 1, 0, [f"k{i}"], i * 100, 100, t) is AppendResult.SUCCESS
    return path


def _reopen_as_rocketmq(path: Path) -> None:
    with TieredIndexFile.open(path, S, N, writable=True):
        pass


def _notes(path: Path) -> list[str]:
    (f,) = check_tiered(path, GeometryHint(S, N)).files
    assert f.ok, f.problems
    return f.notes


@pytest.mark.parametrize(
    "times",
    [
        (BEGIN + 1_500, BEGIN + 9_999),  # messages after the file's begin
        (BEGIN - 7_190, BEGIN - 7_010),  # a file begun after its messages were stored
        (BEGIN - 500, BEGIN + 400),
    ],
)
def test_no_note_on_a_file_as_rocketmq_writes_it(tmp_path: Path, times: tuple[int, int]) -> None:
    path = _file(tmp_path, *times)
    assert _notes(path) == []
    with TieredIndexFile.open(path, S, N) as f:
        compacted = f.compact(tmp_path / "segment")
    assert _notes(compacted) == []


@pytest.mark.parametrize("times", [(BEGIN + 1_500, BEGIN + 9_999), (BEGIN - 7_190, BEGIN - 7_010)])
def test_note_on_the_end_timestamp_a_reopen_resets(tmp_path: Path, times: tuple[int, int]) -> None:
    """Both ways it goes wrong: the reset moves the end time earlier than the newest
    message, or (a file begun after its messages) later."""
    path = _file(tmp_path, *times)
    _reopen_as_rocketmq(path)
    (note,) = _notes(path)
    assert f"end timestamp {BEGIN} " in note and "reopens a local file" in note
    assert "expires an uploaded index segment" in note
    with TieredIndexFile.open(path, S, N) as f:
        assert f.end_timestamp == BEGIN
        compacted = f.compact(tmp_path / "segment")
    (note,) = _notes(compacted)
    assert "reopens a local file" in note


def test_note_on_an_end_timestamp_changed_otherwise(tmp_path: Path) -> None:
    path = _file(tmp_path, BEGIN + 1_500, BEGIN + 9_999)
    data = bytearray(path.read_bytes())
    data[12:20] = (BEGIN + 60_000).to_bytes(8, "big")
    path.write_bytes(bytes(data))
    (note,) = _notes(path)
    assert "something else changed it" in note


def test_a_later_put_raises_the_end_again(tmp_path: Path) -> None:
    path = _file(tmp_path, BEGIN + 1_500)
    _reopen_as_rocketmq(path)
    with TieredIndexFile.open(path, S, N, writable=True) as f:
        assert f.put_key("T", 1, 0, ["later"], 900, 100, BEGIN + 5_000) is AppendResult.SUCCESS
    assert _notes(path) == []


def test_cli_check_prints_the_note_and_stays_healthy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, BEGIN + 1_500, BEGIN + 9_999)
    _reopen_as_rocketmq(path)
    status, out, err = run(capsys, "check", str(tmp_path), "--hash-slot-num", str(S),
                           "--index-num", str(N))  # fmt: skip
    assert status == 0, out + err
    assert "all ok" in out
    assert f"note: {path}: the header's end timestamp {BEGIN}" in err
    status, out, err = run(capsys, "check", str(path), "--hash-slot-num", str(S),
                           "--index-num", str(N), "--json")  # fmt: skip
    assert status == 0, err
    (f,) = json.loads(out)["files"]
    assert f["ok"] and len(f["notes"]) == 1


@given(st.integers(-(10**9), 10**9))
def test_store_time_bounds_hold_the_time(offset: int) -> None:
    low, high = store_time_bounds(time_diff(BEGIN + offset, BEGIN), BEGIN)
    assert low <= BEGIN + offset <= high
    assert high - low == (1998 if time_diff(BEGIN + offset, BEGIN) == 0 else 999)
