"""A ``build`` killed (kill -9) at every
write step of a batch (entries written, half the slot heads, all heads, before the
header) leaves files that the next run repairs and says so; the resumed store answers
every key with every offset and its headers agree with its slots.

Before the fix, a kill between the heads and the header, then the same build again,
left ``header hashSlotCount is 74, expected 0..64`` and lost offsets.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from storage.storage_helpers import GEO, INDEX, SLOTS, cli, hidden, records, write_csv

from rmqarrow.format.layout import Geometry, map_regions
from rmqarrow.format.naming import list_index_files
from rmqarrow.format.records import index_keys
from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService

STEPS = ["put:entries", "put:some-heads", "put:heads"]
N = 240  # 480 entries: 8 files of 63


def _check_store(store: Path, n: int) -> None:
    """Every key answers every offset; every file's header agrees with its slot table."""
    with IndexService(store, SLOTS, INDEX, 1 << 20, read_only=True) as s:
        s.load()
        for f in s.files:
            heads = f.regions.slots.astype(np.int64)
            assert heads.max(initial=0) < f.index_count, f.path
            assert f.hash_slot_count == np.count_nonzero(heads) or len(s.files) > 1
            assert f.hash_slot_count <= SLOTS
        for r in records(n):
            for key in index_keys(r):
                got = s.query_offset("T", key.split("#", 1)[1], 10_000).phy_offsets
                assert r.commit_log_offset in got, (key, r.commit_log_offset)


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("visit", [1, 4])
def test_build_killed_at_each_write_step_resumes_consistent(
    tmp_path: Path, step: str, visit: int, numba: bool
) -> None:
    src = write_csv(tmp_path / "in.csv", records(N))
    store = tmp_path / "store"
    cli("build", store, "--from", src, *GEO, "--batch-rows", "70").check_returncode()
    first = cli(
        "build",
        store,
        "--from",
        write_csv(tmp_path / "more.csv", records(N, N)),
        *GEO,
        "--batch-rows",
        "30",
        crash=f"{step}@{visit}",
        numba=numba,
    )
    assert first.returncode == -9, first.stderr
    # before the resume: an interrupted write is not damage, and info/check say what it is
    for command in ("info", "check"):
        seen = cli(command, store, *GEO)
        assert seen.returncode == 0 and "damaged" not in seen.stdout, seen.stdout
        if step == "put:heads":  # every head of the run written, the header not
            assert "slot heads point past the header" in seen.stdout, seen.stdout
    again = cli(
        "build", store, "--from", tmp_path / "more.csv", *GEO, "--batch-rows", "30", numba=numba
    )
    assert again.returncode == 0, again.stderr
    # every step is after entries were written and before the header: said and repaired
    assert "rolled back to the header" in again.stderr
    assert "Traceback" not in again.stderr
    _check_store(store, 2 * N)
    assert cli("info", store, *GEO).returncode == 0
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("step", STEPS)
def test_repair_gives_the_bytes_of_the_committed_prefix(
    tmp_path: Path, step: str, numba: bool
) -> None:
    """After the repair, a file is byte-identical to one whose writer stopped at its
    header: the committed records built in one go."""
    big = ["--hash-slot-num", "16", "--index-num", "2000"]
    src = write_csv(tmp_path / "in.csv", records(300))
    store = tmp_path / "store"
    cli(
        "build",
        store,
        "--from",
        write_csv(tmp_path / "a.csv", records(20)),
        *big,
    ).check_returncode()
    killed = cli(
        "build", store, "--from", src, *big, "--batch-rows", "50", crash=f"{step}@3", numba=numba
    )
    assert killed.returncode == -9
    (path,) = list_index_files(store)
    raw = map_regions(path, Geometry(16, 2000), writable=False)
    count = int(raw.header["index_count"][0])
    written = raw.entries[count:].view(np.uint8).reshape(2000 - count, -1).any(axis=1)
    past = int(np.flatnonzero(written)[-1]) + 1 if written.any() else 0
    raw.close()
    assert past  # the kill left entries past the header
    # check names them with their count, as a note: RocketMQ's load trusts the header
    seen = cli("check", store, *big)
    assert seen.returncode == 0 and "healthy" in seen.stdout, seen.stdout
    assert f"note: {path}: {past} entries written past the header's indexCount" in seen.stdout
    assert "the broker never sees them" in seen.stdout
    f = IndexFile.open(path, 16, 2000, writable=True)
    assert f.repaired is not None and "rolled back" in f.repaired
    f.close()
    # the same builds up to the committed count, uninterrupted (a resume starts after the
    # record at the header's end offset, which is whole: records 20.. follow 0..19)
    resumed = (count - 1 - 40) // 2
    assert resumed > 0
    ref = tmp_path / "ref"
    cli("build", ref, "--from", tmp_path / "a.csv", *big).check_returncode()
    cli(
        "build",
        ref,
        "--from",
        write_csv(tmp_path / "r.csv", records(resumed, 20)),
        *big,
    ).check_returncode()
    (ref_path,) = list_index_files(ref)
    assert path.read_bytes() == ref_path.read_bytes()
    again = IndexFile.open(path, 16, 2000, writable=True)
    assert again.repaired is None  # consistent now: nothing more to do
    again.close()


def test_new_store_appears_only_complete(tmp_path: Path) -> None:
    """A build into a new directory is staged beside it: killed, there is no store (not
    a few valid-looking files), and the next run removes the staging folder."""
    src = write_csv(tmp_path / "in.csv", records(N))
    store = tmp_path / "store"
    killed = cli("build", store, "--from", src, *GEO, "--batch-rows", "30", crash="put:heads@5")
    assert killed.returncode == -9
    assert not store.exists()
    left = [n for n in hidden(tmp_path) if n != ".store.lock"]  # the dead writer's lock
    assert len(left) == 1 and ".store.build-" in left[0]
    done = cli("build", store, "--from", src, *GEO)
    assert done.returncode == 0, done.stderr
    assert "removed" in done.stderr and "killed build" in done.stderr
    assert hidden(tmp_path) == []
    _check_store(store, N)


def test_bad_row_leaves_nothing(tmp_path: Path) -> None:
    """A bad value near the end of the input: no store is created,
    and an existing store is not touched (its bytes are unchanged)."""
    recs = records(N)
    src = write_csv(tmp_path / "in.csv", recs)
    text = src.read_text().splitlines()
    text[-2] = text[-2].rsplit(",", 3)[0] + ",notanumber,1,0"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(text) + "\n")
    store = tmp_path / "store"
    done = cli("build", store, "--from", bad, *GEO, "--batch-rows", "30")
    assert done.returncode == 1
    assert not store.exists() and hidden(tmp_path) == []
    cli("build", store, "--from", src, *GEO).check_returncode()
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    done = cli("build", store, "--from", bad, *GEO, "--batch-rows", "30")
    assert done.returncode == 1
    assert "nothing was written" in done.stderr
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before
    shutil.rmtree(store)
