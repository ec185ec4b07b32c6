"""The interactive ``sql`` prompt on a real terminal: line editing, history kept."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from golden_data import golden_set


def _read_until(fd: int, marker: bytes, seconds: float = 60.0) -> bytes:
    out = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end and marker not in out:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out


def test_up_arrow_recalls_and_history_is_kept(tmp_path: Path) -> None:
    g = golden_set("basic")
    master, slave = pty.openpty()
    env = dict(os.environ, HOME=str(tmp_path), TERM="xterm")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "sql",
            str(g.store_dir),
            "--hash-slot-num",
            str(g.hash_slot_num),
            "--index-num",
            str(g.index_num),
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    try:
        assert b"rmqarrow> " in _read_until(master, b"rmqarrow> ")
        os.write(master, b"SELECT 40 + 2 AS answer;\r")
        first = _read_until(master, b"rmqarrow> ")
        assert b"42" in first
        os.write(master, b"\x1b[A\r")  # up arrow: the last statement again
        again = _read_until(master, b"rmqarrow> ")
        assert b"SELECT 40 + 2 AS answer;" in again and b"42" in again
        os.write(master, b"\x04")  # Ctrl-D ends the session
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    history = (tmp_path / ".rmqarrow_sql_history").read_text()
    assert "SELECT 40 + 2 AS answer;" in history
