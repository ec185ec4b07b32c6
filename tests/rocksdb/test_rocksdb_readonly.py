"""Reading never writes a byte of the broker's directory nor takes its lock, also while
another process holds the database open for writing."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmqarrow.errors import ReadOnlyIndexError
from rmqarrow.rocksdb import RocksDBIndex

HOUR = 3_600_000
T0 = 1_749_128_400_000

#: a broker stand-in: RocksDB opened read-write (it holds LOCK), writing index records on
#: request; "w N" writes N more messages' records (not flushed: they live in the WAL and
#: the memtable), "f" flushes, "q" quits.  It answers "ready" after each command.
WRITER = textwrap.dedent("""
    import sys, struct
    import rocksdict as rd
    path = sys.argv[1]
    opts = rd.Options(raw_mode=True)
    cfs = {n: rd.Options(raw_mode=True) for n in ("timer", "trans")}
    db = rd.Rdict(path, options=opts, column_families=cfs)
    n = int(sys.argv[2])
    L = struct.Struct(">q")
    def put(i):
        t = T0 + i * 1000
        h = t - t % 3600000
        db[L.pack(h) + f"@T@K@k{i % 7}@ID{i:06d}@".encode() + L.pack(i * 100)] = L.pack(t)
        db[b"lastOffsetPy"] = L.pack(i * 100)
        db[b"lastStoreTimeStamp"] = L.pack(t)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "w":
            for i in range(n, n + int(cmd[1])):
                put(i)
            n += int(cmd[1])
        elif cmd[0] == "f":
            db.flush()
        elif cmd[0] == "q":
            break
        print("ready", flush=True)
    db.close()
""").replace("T0", str(T0))


def snapshot(d: Path) -> dict[str, str]:
    """Every file of ``d`` by name with its sha256 (what "byte-identical" compares)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def lock_holders(db: Path) -> set[int]:
    """The processes holding a lock on ``db/LOCK``, read from /proc/locks (touching nothing:
    even a failed read-write open by RocksDB would rotate the directory's LOG file)."""
    ino = (db / "LOCK").stat().st_ino
    holders = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        pid, where = fields[4], fields[5]
        if where.rsplit(":", 1)[-1] == str(ino):
            holders.add(int(pid))
    return holders


def make_db(path: Path, messages: int) -> None:
    with RocksDBIndex.create(path) as w:
        for i in range(messages):
            w.build_index("T", f"k{i % 7}", None, f"ID{i:06d}", i * 100, T0 + i * 1000, 0, 100)
        w.flush()


class Writer:
    def __init__(self, path: Path, start: int) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._wait()

    def _wait(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", line

    def send(self, cmd: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        self._wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("q\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


@pytest.fixture
def live_db(tmp_path: Path) -> Iterator[tuple[Path, Writer]]:
    db = tmp_path / "store" / "rocksdbstore"
    make_db(db, 50)
    writer = Writer(db, 50)
    try:
        yield db, writer
    finally:
        writer.stop()


def test_reading_a_closed_database_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "db"
    make_db(db, 30)
    before = snapshot(db)
    with RocksDBIndex.open(db) as r:
        assert len(r.pairs()) == 30 * 2 + 2
        assert r.query_offset("T", "k1", 64, T0, T0 + HOUR) is not None
    assert snapshot(db) == before


def test_reading_while_a_writer_holds_it(live_db: tuple[Path, Writer]) -> None:
    db, writer = live_db
    writer.send("w 40")  # in the writer's WAL and memtable only
    before = snapshot(db)
    assert lock_holders(db) == {writer.proc.pid}
    with RocksDBIndex.open(db.parent) as r:  # a broker store root finds rocksdbstore/
        pairs = r.pairs()
        assert len(pairs) == 50 * 2 + 40 + 2  # the unflushed writes come from the WAL copy
        answer = r.query_offset("T", "k3", 64, T0, T0 + HOUR, "K")
        assert answer is not None and answer.last_update_phy_offset == 89 * 100
    assert snapshot(db) == before
    assert lock_holders(db) == {writer.proc.pid}
    writer.send("w 10")  # the writer goes on undisturbed
    writer.send("f")
    with RocksDBIndex.open(db) as r:
        assert len(r.pairs()) == 50 * 2 + 50 + 2


def test_open_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "db"
    make_db(db, 3)
    with RocksDBIndex.open(db) as r, pytest.raises(ReadOnlyIndexError):
        r.build_index("T", "k", None, "U1", 10_000, T0, 0, 10)
