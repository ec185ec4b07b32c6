"""A full disk is one clear error before anything is written.

A 2 MiB tmpfs is mounted (we run as root in CI).  Before the fix, ``build`` and
``import`` died of SIGBUS (exit 135, no message) when the memory map touched pages the
filesystem no longer had, ``import``'s staging folder kept the space, and ENOSPC in
``export`` was a traceback.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from storage.storage_helpers import cli, hidden, one_line_error, records, write_csv

# files of 40 + 4*16 + 20*60000 = 1.2 MB: one fits in 2 MiB, two do not
BIG = ["--hash-slot-num", "16", "--index-num", "60000"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (mount -t tmpfs); this run is not root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _used(mnt: Path) -> int:
    st = os.statvfs(mnt)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def test_build_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    # 60 000 entries a file: 100 000 records (2 keys) need 4 files, the disk holds one
    src = write_csv(tmp_path / "in.csv", records(70_000))
    done = cli("build", small_disk / "store", "--from", src, *BIG)
    assert done.returncode == 1, done.stderr  # not 135 (SIGBUS)
    line = one_line_error(done)
    assert "no space left" in line
    assert not (small_disk / "store").exists()  # a new store appears complete or not at all
    assert hidden(small_disk) == []
    assert _used(small_disk) < 64 << 10  # the staging space was released


def test_import_and_export_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    store = tmp_path / "store"
    cli(
        "build", store, "--from", write_csv(tmp_path / "in.csv", records(70_000)), *BIG
    ).check_returncode()
    ds = tmp_path / "ds"
    cli("export", store, ds, *BIG).check_returncode()
    done = cli("import", ds, small_disk / "index")
    assert done.returncode == 1, done.stderr
    assert "no space left" in one_line_error(done)
    assert not (small_disk / "index").exists() and hidden(small_disk) == []
    assert _used(small_disk) < 64 << 10
    # an existing directory: staged beside it, on the same disk, released too
    (small_disk / "index").mkdir()
    done = cli("import", ds, small_disk / "index")
    assert done.returncode == 1
    assert "no space left" in one_line_error(done)
    assert list((small_disk / "index").iterdir()) == [] and hidden(small_disk) == []
    # export: the disk is filled but for 40 KiB, less than the dataset needs
    st = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"\1" * (st.f_bavail * st.f_frsize - (40 << 10)))
    done = cli("export", store, small_disk / "ds", *BIG)
    assert done.returncode == 1, done.stderr
    assert "no space left" in one_line_error(done)
    assert not (small_disk / "ds").exists() and hidden(small_disk) == []
    (small_disk / "filler").unlink()
    assert _used(small_disk) < 64 << 10


def test_demo_on_a_full_disk(small_disk: Path) -> None:
    """The demo writes a CommitLog, a store and a dataset: on a full disk, one line, and
    what it created is removed (the space comes back)."""
    done = cli(
        "demo", "--out", small_disk / "demo", "--engines", "native,duckdb", "--size", "small"
    )
    assert done.returncode == 1, done.stderr
    assert "no space left" in one_line_error(done)
    assert not (small_disk / "demo").exists()
    assert _used(small_disk) < 64 << 10


def _parts(ds: Path) -> set[str]:
    return {p.relative_to(ds).as_posix() for p in ds.rglob("*.parquet")}


def test_incremental_and_follow_on_a_full_disk(tmp_path: Path, small_disk: Path) -> None:
    """An incremental run that fills the disk says one line and removes the parts it
    wrote (the space comes back); a follower warns and retries until there is room, then
    catches up."""
    import signal
    import sys
    import time

    from rmqarrow.format.layout import Geometry
    from rmqarrow.testing.stores import write_random_file

    g = Geometry(16, 60000)
    store = tmp_path / "store"
    store.mkdir()
    write_random_file(store / "20231114221320000", g, 2000, seed=1)
    ds = small_disk / "ds"
    cli("export", store, ds, "--incremental", *BIG).check_returncode()
    before, used = _parts(ds), _used(small_disk)
    write_random_file(store / "20231114221320001", g, 59_999, seed=2, begin_phy_offset=10**9)
    st = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\1" * (st.f_bavail * st.f_frsize - (300 << 10)))
    done = cli("export", store, ds, "--incremental", *BIG)
    assert done.returncode == 1, done.stderr
    line = one_line_error(done)
    assert "no space left" in line and "pyarrow" not in line.lower()
    assert _parts(ds) == before and hidden(ds) == []  # nothing of the failed run is left
    assert _used(small_disk) - filler.stat().st_size <= used + (16 << 10)
    follow = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "export",
            store,
            ds,
            "--follow",
            "--interval",
            "0.2",
            *BIG,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(4)  # at least two failed rounds (retried after 1 s, then 2 s)
        assert follow.poll() is None  # still running: a full disk heals
        filler.unlink()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _parts(ds) != before:  # the round that healed wrote the grown file's parts
                break
            time.sleep(0.2)
    finally:
        follow.send_signal(signal.SIGTERM)
        out, err = follow.communicate(timeout=60)
    assert follow.returncode == 0, err
    assert "round failed" in err and "no space left" in err and "retrying in" in err
    assert "Traceback" not in err
    assert "files +1 new" in out
