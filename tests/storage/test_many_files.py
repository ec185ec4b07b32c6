"""Stores and datasets of thousands of files, under a low open-file limit.

Every command runs as a real process whose ``RLIMIT_NOFILE`` is 256: far fewer
descriptors than the store has files, so a command that keeps one open (or mapped) per
file fails.  The store is 1,200 files of a tiny geometry (712 bytes each); its export
holds 3,600 Parquet parts, past the point (about 500 files) where DuckDB's view of the
entries once outgrew its expression depth limit.  (The benchmark, bench_files.py, runs
the same commands on 10,000 files.)
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from storage.storage_helpers import write_csv

from rmqarrow.format.layout import Geometry
from rmqarrow.format.records import MessageRecord
from rmqarrow.index.service import IndexService
from rmqarrow.testing import write_random_file

FD_LIMIT = 256
FILES = 1_200
GEOMETRY = Geometry(8, 32)
GEO = ["--hash-slot-num", "8", "--index-num", "32"]
T0 = 1_700_000_000_000


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def run(*args: object, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``rmqarrow ARGS`` in a fresh interpreter limited to :data:`FD_LIMIT` descriptors."""
    env = dict(os.environ)
    env.pop("RMQARROW_TRUST_DATASET", None)
    return subprocess.run(
        [sys.executable, "-m", "rmqarrow", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        preexec_fn=_limited,
    )


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Too many open files" not in done.stderr
    return done.stdout


#: Offsets of the records of key ``T#hot``, put in the newest file (a lookup of it walks
#: every file: it asks for more than there are).
HOT = [3 * 10**9 + 100 * i for i in range(5)]


def write_store(directory: Path, files: int) -> Path:
    """``files`` tiny files named one second apart, 31 random entries each over 50 key
    hashes, then one file (partly filled) with the records of ``T#hot``."""
    directory.mkdir(parents=True)
    start = dt.datetime(2023, 11, 14, 22, 0, 0)
    for i in range(files):
        name = (start + dt.timedelta(seconds=i)).strftime("%Y%m%d%H%M%S") + "000"
        write_random_file(
            directory / name,
            GEOMETRY,
            31,
            seed=i,
            begin_timestamp=T0 + i * 100_000,
            begin_phy_offset=i * 10**6,
            distinct_hashes=50,
        )
    with IndexService(directory, 8, 32) as service:
        service.load()
        for i, offset in enumerate(HOT):
            service.build_index(MessageRecord("T", "hot", f"u{i}", offset, T0 + 10**9 + i))
    return directory


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_store(tmp_path_factory.mktemp("many") / "store", FILES)


@pytest.fixture(scope="module")
def big_dataset(big_store: Path) -> Path:
    """The store exported by a process under the limit (the export test itself)."""
    out = big_store.parent / "dataset"
    ok(run("export", big_store, out, *GEO))
    return out


def test_service_keeps_few_maps_open(big_store: Path) -> None:
    """Loading every file and querying all of them keeps the descriptors bounded."""
    from rmqarrow.index import _maps

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = fds()
    with IndexService(big_store, 8, 32, read_only=True) as service:
        service.load()
        assert len(service.files) == FILES + 1
        found = service.query_offsets(["T#hot", "T#cold"], 64, 0, 2**63 - 1)
        assert found.column("phy_offset").to_pylist() == HOT[::-1]
        assert fds() - before <= _maps.capacity() + 4
        assert _maps.open_count() <= _maps.capacity()
        assert sum(f.entry_count for f in service.files) == 31 * FILES + 2 * len(HOT)
    assert fds() - before <= 4


def hot_offsets(out: str) -> list[int]:
    return [int(line) for line in out.splitlines() if line.strip().isdigit()]


def test_native_query_and_verify(big_store: Path) -> None:
    out = ok(run("query", big_store, "--topic", "T", "--key", "hot", *GEO))
    assert hot_offsets(out) == HOT[::-1]
    ok(run("verify", big_store, "--engines", "native", "--sample", "50", *GEO))


def test_build_appends(big_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(big_store, store)
    base = 10**12
    records = [
        MessageRecord("T", f"new{i}", f"u{i}", base + 100 * i, T0 + 10**9 + i) for i in range(40)
    ]
    ok(run("build", store, "--from", write_csv(tmp_path / "r.csv", records), *GEO))
    assert len(list(store.iterdir())) > FILES + 1
    out = ok(run("query", store, "--topic", "T", "--key", "new7", *GEO))
    assert str(base + 700) in out


def test_duckdb_query_over_the_store(big_store: Path) -> None:
    out = ok(run("query", big_store, "--engine", "duckdb", "--topic", "T", "--key", "hot", *GEO))
    assert hot_offsets(out) == HOT[::-1]


def test_duckdb_and_sql_over_the_dataset(big_dataset: Path) -> None:
    out = ok(
        run("sql", big_dataset, "SELECT count(*) AS n, count(DISTINCT file_name) AS f FROM entries")
    )
    assert f"{31 * FILES + 2 * len(HOT)}" in out and f"{FILES + 1}" in out
    out = ok(
        run("sql", big_dataset, "SELECT phy_offset FROM index_lookup('T#hot', 64) ORDER BY ordinal")
    )
    assert hot_offsets(out) == HOT[::-1]
    out = ok(run("query", big_dataset, "--engine", "duckdb", "--topic", "T", "--key", "hot"))
    assert hot_offsets(out) == HOT[::-1]
    ok(run("stats", big_dataset))


def test_verify_dataset(big_store: Path, big_dataset: Path) -> None:
    out = ok(
        run(
            "verify",
            big_store,
            "--dataset",
            big_dataset,
            "--engines",
            "native,duckdb",
            "--sample",
            "50",
            *GEO,
        )
    )
    assert "modified since export" not in out


@pytest.mark.parametrize("copy", [["cp", "-a"], ["cp", "-r"]], ids=["cp-a", "cp-r"])
def test_copy_of_the_store_is_not_stale(tmp_path: Path, copy: list[str]) -> None:
    """A byte-identical copy is up to date, whatever its modification times; a file
    written since export is not."""
    store = write_store(tmp_path / "store", 12)
    ok(run("export", store, tmp_path / "ds", *GEO))
    copied = tmp_path / "copy"
    subprocess.run([*copy, str(store), str(copied)], check=True)
    os.utime(next(copied.iterdir()), ns=(0, 10**18))  # a clock far off: still the same bytes
    out = ok(
        run(
            "verify",
            copied,
            "--dataset",
            tmp_path / "ds",
            "--engines",
            "native",
            "--sample",
            "20",
            *GEO,
        )
    )
    assert "modified since export" not in out and "stale" not in out.lower()
    newest = sorted(copied.iterdir())[-1]  # the partly filled one: appended to in place
    with IndexService(copied, 8, 32) as service:
        service.load()
        service.build_index(MessageRecord("T", "late", "u-late", 10**12, T0 + 10**10))
    done = run(
        "verify",
        copied,
        "--dataset",
        tmp_path / "ds",
        "--engines",
        "native",
        "--sample",
        "20",
        *GEO,
    )
    assert done.returncode != 0
    assert f"{newest.name}: modified since export" in done.stdout + done.stderr


def test_exhausted_descriptors_name_the_limit(tmp_path: Path) -> None:
    """Below what even one map at a time needs, the command fails in one line naming the
    limit (never a traceback or a bare "Too many open files")."""
    store = write_store(tmp_path / "store", 40)
    failed = succeeded = 0
    for limit in range(5, 10):

        def limited(limit: int = limit) -> None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rmqarrow",
                "query",
                str(store),
                "--topic",
                "T",
                "--key",
                "hot",
                *GEO,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=limited,
        )
        if done.returncode == 0:
            succeeded += 1
            continue
        failed += 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert f"too many open files (ulimit -n is {limit})" in lines[0]
    assert failed and succeeded
