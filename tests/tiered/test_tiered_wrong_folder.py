"""A folder of RocketMQ's tiered store that holds no index file itself: the error says
which folder to pass instead (the segment folder below it, or where an emptied
``tiered_index_file/`` went)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_run import one_error, run

import rmqarrow
from rmqarrow.errors import UsageError
from rmqarrow.tiered import TieredIndexFile, segment_dir, segment_file_name

BEGIN = 1_732_000_000_000


def _tier(tmp_path: Path) -> tuple[Path, Path]:
    """A POSIX backend's folder with one uploaded index segment, and that segment's folder."""
    root = tmp_path / "tier"
    segments = segment_dir(root, "rmqarrow", "broker-a")
    segments.mkdir(parents=True)
    (root / "0a1b2c3d_rmqarrow" / "broker-a" / "Orders" / "0" / "COMMIT_LOG").mkdir(parents=True)
    with TieredIndexFile.create(tmp_path / str(BEGIN), BEGIN, 8, 32) as f:
        f.put_key("Orders", 0, 0, ["k"], 0, 100, BEGIN + 1_000)
        f.compact(segments / segment_file_name(0))
    return root, segments


@pytest.mark.parametrize("depth", [0, 1, 2, 3, 4])
def test_a_folder_above_the_segments_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    root, segments = _tier(tmp_path)
    assert segments.parents[4] == root
    folder = segments.parents[4 - depth]  # from tieredStoreFilePath down to rmq_sys_INDEX/0
    status, out, err = run(capsys, "info", str(folder))
    assert status == 2, out
    one_error(err, f"its uploaded index segments are in {segments}; pass that folder")
    with pytest.raises(UsageError, match="pass that folder"):
        rmqarrow.open(folder)
    status, out, err = run(capsys, "info", str(segments))
    assert status == 0, err


@pytest.mark.parametrize("left", [[], ["compacting"]], ids=["empty", "a subfolder left"])
def test_an_emptied_local_folder_says_where_the_files_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], left: list[str]
) -> None:
    local = tmp_path / "store" / "tiered_index_file"
    local.mkdir(parents=True)
    for name in left:
        (local / name).mkdir()
    status, out, err = run(capsys, "query", str(local), "--key", "Orders#k")
    assert status == 2, out
    one_error(err, "an empty tiered_index_file/ folder", "rmq_sys_INDEX/0/INDEX")


def test_other_folders_of_folders_keep_their_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = _tier(tmp_path)
    topic = root / "0a1b2c3d_rmqarrow" / "broker-a" / "Orders"
    status, out, err = run(capsys, "info", str(topic))
    assert status == 2, out
    one_error(err, "a directory with no files (only folders)")


def test_a_folder_of_renamed_tiered_files_says_to_pass_each_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # copies under names no broker gives (as the golden sets hold them): which file is the
    # newer is not known from the names, so each one is read on its own
    golden = Path(__file__).parents[1] / "golden" / "tiered" / "tiered_basic"
    for name in ("compacted.bin", "unsealed.bin"):
        shutil.copyfile(golden / name, tmp_path / name)
    status, out, err = run(capsys, "info", str(tmp_path))
    assert status == 2, out
    one_error(err, "not a store itself; it holds tiered IndexStoreFiles under names no broker")
    one_error(err, "(compacted.bin, unsealed.bin): pass one file at a time")
    assert run(capsys, "info", str(tmp_path / "compacted.bin"))[0] == 0
