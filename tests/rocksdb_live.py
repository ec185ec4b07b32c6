"""Helpers of the RocksDB-index tests: a writer process standing in for a live broker, the
directory snapshot "byte-identical" compares, a damaged database."""

from __future__ import annotations

import hashlib
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import rocksdict

from rmqarrow.rocksdb import RocksDBIndex

L = struct.Struct(">q")
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
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(start)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
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


def damaged(path: Path) -> None:
    """A database with one of each kind of damage ``check`` reports."""
    hour = 1_749_128_400_000
    good = L.pack(hour) + b"@T@K@k@ID1@" + L.pack(100)
    db = rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
    db[good] = L.pack(hour + 5)
    db[L.pack(hour) + b"@T@X@k@ID2@" + L.pack(200)] = L.pack(hour + 6)  # unknown type
    db[L.pack(hour) + b"@T@K@k@ID3@" + L.pack(300)] = b"\x01\x02\x03\x04"  # 4-byte value
    db[L.pack(hour) + b"@T@U@ID4@" + L.pack(400)] = L.pack(hour + 7_200_000)  # wrong hour
    db[b"lastOffsetPy"] = L.pack(100)  # behind offset 400
    db[b"lastStoreTimeStamp"] = L.pack(hour + 7_200_000)
    db.close()
