"""``verify`` and ``check`` on a store that changes under them.

A writer process appends batches (rolling to new files as they fill) while another
deletes the oldest file again and again, as a broker's expiry does.  ``verify`` compares
the native lookup with DuckDB over one snapshot (each file's header pinned once at the
start), so an engine reading later never sees newer entries; a file expired mid-run is a
note, never a death.  ``check`` names what it finds but never dies on a vanished file.

Before: ``verify --engines native,duckdb`` failed every run ("no native rule explains
them": DuckDB read later and saw newer entries) and both commands died with "no such
index file" when a file was expired mid-run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run import run

import rmqarrow
from rmqarrow.verify import verify

SLOTS, INDEX = 100, 400  # the 1:4 ratio: fitted from the size as RocketMQ-sized stores are
KEYS = 5

WRITER = f"""
import os, sys, time
import pyarrow as pa
from rmqarrow.index.service import IndexService
s = IndexService(sys.argv[1], {SLOTS}, {INDEX}, 1 << 20)
s.load()
a = 0
while not os.path.exists(sys.argv[2]):
    b = a + 7
    s.build_index_batch(pa.table({{
        "topic": ["T"] * (b - a),
        "keys": [f"k{{i % {KEYS}}}" for i in range(a, b)],
        "uniq_key": [f"u{{i}}" for i in range(a, b)],
        "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, b)], pa.int64()),
        "store_timestamp": pa.array([1_700_000_000_000 + 10 * i for i in range(a, b)], pa.int64()),
        "sys_flag": pa.array([0] * (b - a), pa.int32()),
    }}))
    a = b
    time.sleep(0.02)
s.close()
"""

#: deletes the oldest file while more than five are left, as a broker's expiry does
EXPIRER = """
import os, sys, time
from rmqarrow.format.naming import list_index_files
while not os.path.exists(sys.argv[2]):
    files = list_index_files(sys.argv[1])
    if len(files) > 5:
        try:
            files[0].unlink()
        except FileNotFoundError:
            pass
    time.sleep(0.2)
"""


@pytest.fixture
def live_store(tmp_path: Path) -> Iterator[Path]:
    store, stop = tmp_path / "store", tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), str(stop)])
    expirer = None
    try:
        waited = time.monotonic()
        while len(list(store.glob("[0-9]*"))) < 4:
            assert writer.poll() is None, "the writer died"
            assert time.monotonic() - waited < 120, "the writer never rolled"
            time.sleep(0.01)
        verify(store, engines=["native", "duckdb"], sample=10)  # imports and compiles once
        expirer = subprocess.Popen([sys.executable, "-c", EXPIRER, str(store), str(stop)])
        yield store
    finally:
        stop.touch()
        for p in (writer, expirer):
            if p is None:
                continue
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()  # never leave a writer behind; its returncode fails the test
                p.wait()
    assert writer.returncode == 0
    assert expirer is not None and expirer.returncode == 0


def test_verify_compares_one_snapshot_of_a_live_expiring_store(live_store: Path) -> None:
    for seed in range(12):
        report = verify(live_store, engines=["native", "duckdb"], sample=150, seed=seed)
        assert report.ok, report.to_dict()
        duckdb = next(e for e in report.engines if e.engine == "duckdb")
        assert duckdb.status == "ok" and duckdb.offsets_compared > 0
        assert not any((live_store / name).exists() for name in report.expired)


def test_check_and_verify_commands_on_a_live_expiring_store(
    live_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(6):
        status, out, err = run(
            capsys,
            "check",
            str(live_store),
            "--hash-slot-num",
            str(SLOTS),
            "--index-num",
            str(INDEX),
        )
        assert "no such index file" not in err + out
        assert status == 0, out + err
        status, out, err = run(
            capsys, "verify", str(live_store), "--engines", "native,duckdb", "--sample", "100"
        )
        assert "no such index file" not in err + out
        assert status == 0, out + err
        assert "OK: every engine agrees" in out


def test_an_open_store_answers_while_files_grow_and_expire(live_store: Path) -> None:
    with rmqarrow.open(live_store) as s:
        for _ in range(30):
            for k in range(KEYS):
                answer = s.query("T", f"k{k}", max_num=1000)
                assert answer == sorted(answer, reverse=True)
                assert all((o - 1000) // 100 % KEYS == k for o in answer)
            time.sleep(0.01)
