"""A process that writes a store as a running RocketMQ broker does, for live-store tests.

``python -m rmqarrow.testing.broker_like STORE [options]`` (or :func:`start_broker_like`
from a test) behaves like a broker on ``STORE`` as far as the files show:

- it takes the broker's lock on ``STORE/lock`` exactly as Java's
  ``FileChannel.tryLock(0, 1, false)`` does (an exclusive POSIX record lock on byte 0,
  ``fcntl``, not ``flock``; the file is created when missing and ``lock`` written into
  it) and creates an empty ``STORE/abort``;
- in batches, it appends messages to the CommitLog (``STORE/commitlog``, files of
  ``commitlog_file_size`` bytes, each full-size from birth with a zero tail, rolled with
  the broker's end-of-file blank record) and indexes them (``STORE/index``, through
  :class:`~rmqarrow.IndexService`, files rolled when full), then records the store times
  in ``STORE/checkpoint``;
- with ``keep_commitlog_files`` it expires as a broker does: the oldest CommitLog files
  beyond that many are deleted, then every index file wholly below the oldest CommitLog
  offset left (never the newest);
- on SIGTERM or SIGINT it finishes the batch in progress, flushes, removes ``abort`` and
  releases the lock (the lock file stays, as Java leaves it), prints one JSON summary line
  and exits 0.  Killed with SIGKILL it leaves ``abort``, and the kernel frees the lock.

It prints ``ready PID`` on stdout once the lock and ``abort`` are in place and the first
batch is written.  Everything is deterministic for a seed: message ``i`` has the topic
``TOPICS[i % len(TOPICS)]``, the keys ``order-i`` and ``key-R`` (``R`` drawn from
``keys`` values), the UNIQ_KEY ``SEED (8 hex) + i (24 hex)``, the store time
``start_ms + i * step_ms`` and a body of 16 to 64 random bytes; index files are named
(in UTC) after the store time of the message that opens them.  Only the timing of
batches (``interval``) follows the wall clock.  The default index geometry keeps
RocketMQ's 1:4 ratio of slots to entries, so every command fits it from the file sizes.
It starts only on a store without a CommitLog (a broker's restart and recovery are not
modelled).

Command line (stable; every option has a default)::

    python -m rmqarrow.testing.broker_like STORE [--seed 7] [--batch 50]
        [--interval 0.01] [--messages 0] [--stop-when-done] [--keys 100]
        [--commitlog-file-size 65536] [--hash-slot-num 64] [--index-num 256]
        [--keep-commitlog-files 0] [--start-ms 1700000000000] [--step-ms 1]

``--messages 0`` appends until stopped; with ``--messages N`` it stops appending after
``N`` and, unless ``--stop-when-done``, keeps holding the store (a broker without
traffic) until it is stopped.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rmqarrow._broker import ABORT_NAME, hold_broker_lock, release_broker_lock
from rmqarrow.commitlog.writer import CommitLogWriter, Message
from rmqarrow.errors import UsageError
from rmqarrow.format.checkpoint import StoreCheckpoint
from rmqarrow.format.layout import Geometry
from rmqarrow.format.records import MessageRecord
from rmqarrow.index.service import IndexService

__all__ = [
    "TOPICS",
    "BrokerLike",
    "BrokerLikeOptions",
    "BrokerLikeProcess",
    "broker_like_message",
    "main",
    "start_broker_like",
]

TOPICS = ("TopicA", "TopicB", "TopicC")


@dataclass(frozen=True)
class BrokerLikeOptions:
    """How the broker-like writer writes (see the module's docstring)."""

    seed: int = 7
    batch: int = 50
    interval: float = 0.01
    messages: int = 0
    stop_when_done: bool = False
    keys: int = 100
    commitlog_file_size: int = 64 * 1024
    hash_slot_num: int = 64
    index_num: int = 256
    keep_commitlog_files: int = 0
    start_ms: int = 1_700_000_000_000
    step_ms: int = 1

    def __post_init__(self) -> None:
        for name in ("batch", "keys", "hash_slot_num"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("messages", "keep_commitlog_files", "step_ms", "start_ms"):
            if getattr(self, name) < 0:
                raise UsageError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.index_num < 2:
            raise UsageError(f"index_num must be >= 2, got {self.index_num}")
        if not self.interval >= 0:
            raise UsageError(f"interval must be >= 0 seconds, got {self.interval}")
        if self.commitlog_file_size < 4096:
            raise UsageError(
                f"commitlog_file_size must be >= 4096 bytes, got {self.commitlog_file_size}"
            )


def broker_like_message(i: int, options: BrokerLikeOptions) -> Message:
    """Message ``i`` of the stream (the same for the same seed, whatever came before)."""
    rng = random.Random(options.seed * 1_000_003 + i)
    return Message(
        topic=TOPICS[i % len(TOPICS)],
        body=rng.randbytes(rng.randint(16, 64)),
        keys=[f"order-{i}", f"key-{rng.randrange(options.keys)}"],
        tags="TagA",
        uniq_key=f"{options.seed & 0xFFFFFFFF:08X}{i:024X}",
        queue_id=i % 4,
        queue_offset=i // 4,
        born_timestamp=options.start_ms + i * options.step_ms,
        store_timestamp=options.start_ms + i * options.step_ms,
    )


@dataclass
class _Summary:
    store: str
    messages: int = 0
    commitlog_files: list[str] = field(default_factory=list)
    index_files: list[str] = field(default_factory=list)
    expired_commitlog_files: int = 0
    expired_index_files: int = 0
    clean: bool = False


class BrokerLike:
    """The writer in this process: :meth:`start`, then :meth:`step` per batch, then
    :meth:`stop`.  :func:`main` and :func:`start_broker_like` run it as a process."""

    def __init__(self, store: str | os.PathLike[str], options: BrokerLikeOptions) -> None:
        self.store = Path(store)
        self.options = options
        self.written = 0
        self._lock_fd: int | None = None
        self._log: CommitLogWriter | None = None
        self._index: IndexService | None = None
        self._now = options.start_ms
        self.summary = _Summary(str(self.store))

    @property
    def done(self) -> bool:
        return 0 < self.options.messages <= self.written

    def start(self) -> None:
        """Take the lock, create ``abort``, open the CommitLog and the index."""
        o = self.options
        commitlog = self.store / "commitlog"
        self.store.mkdir(parents=True, exist_ok=True)
        self._lock_fd = hold_broker_lock(self.store)  # a second broker is refused first
        if commitlog.is_dir() and any(commitlog.iterdir()):
            release_broker_lock(self._lock_fd)
            self._lock_fd = None
            raise UsageError(
                f"{commitlog}: already holds CommitLog files; the broker-like writer starts "
                "on a new store"
            )
        (self.store / ABORT_NAME).touch()
        self._log = CommitLogWriter(
            commitlog, mapped_file_size=o.commitlog_file_size, preallocate=True
        )
        self._index = IndexService(
            self.store / "index",
            geometry=Geometry(o.hash_slot_num, o.index_num),
            checkpoint_path=self.store / "checkpoint",
            tz=_dt.UTC,
            clock=lambda: self._now,
        )
        self._index.load()

    def step(self) -> int:
        """Append, index and checkpoint one batch; the messages written."""
        assert self._log is not None and self._index is not None
        o = self.options
        n = o.batch if o.messages == 0 else min(o.batch, o.messages - self.written)
        records = []
        for i in range(self.written, self.written + n):
            m = broker_like_message(i, o)
            at = self._log.append(m)
            keys = m.keys if isinstance(m.keys, str) else " ".join(m.keys or ())
            records.append(
                MessageRecord(m.topic, keys, m.uniq_key, at.physical_offset, m.store_timestamp)
            )
        self._log.flush()
        for r in records:
            self._now = r.store_timestamp
            self._index.build_index(r)
        if self._index.files:
            self._index.flush(self._index.files[-1])
        self.written += n
        if records:
            last = records[-1].store_timestamp
            StoreCheckpoint.update(
                self.store / "checkpoint", physic_msg_timestamp=last, logics_msg_timestamp=last
            )
        self._expire()
        return n

    def _expire(self) -> None:
        keep = self.options.keep_commitlog_files
        if keep == 0:
            return
        assert self._log is not None and self._index is not None
        files = sorted((self.store / "commitlog").iterdir())
        for old in files[: max(len(files) - keep, 0)]:
            old.unlink()
            self.summary.expired_commitlog_files += 1
        oldest = sorted((self.store / "commitlog").iterdir())[0]
        gone = self._index.delete_expired_files(int(oldest.name))
        self.summary.expired_index_files += len(gone)

    def stop(self) -> dict[str, Any]:
        """A clean shutdown: flush, remove ``abort``, release the lock; the summary."""
        if self._index is not None:
            self._index.flush()
            self.summary.index_files = [f.path.name for f in self._index.files]
            self._index.close()
        if self._log is not None:
            self._log.close()
        self.summary.commitlog_files = sorted(p.name for p in (self.store / "commitlog").iterdir())
        (self.store / ABORT_NAME).unlink(missing_ok=True)
        if self._lock_fd is not None:
            release_broker_lock(self._lock_fd)
            self._lock_fd = None
        self.summary.messages = self.written
        self.summary.clean = True
        return asdict(self.summary)


def run(store: str | os.PathLike[str], options: BrokerLikeOptions, stop: threading.Event) -> Any:
    """Write until ``stop`` is set (or the messages are written and ``stop_when_done``);
    prints ``ready PID`` after the first batch; the summary of the clean stop."""
    broker = BrokerLike(store, options)
    broker.start()
    ready = False
    while not stop.is_set():
        if not broker.done:
            broker.step()
        if not ready:
            print(f"ready {os.getpid()}", flush=True)
            ready = True
        if broker.done and options.stop_when_done:
            break
        stop.wait(options.interval if not broker.done else 0.05)
    return broker.stop()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m rmqarrow.testing.broker_like",
        description="Write STORE as a running RocketMQ broker does (lock, abort, CommitLog, "
        "index, checkpoint, expiry) until SIGTERM; for live-store tests.",
    )
    d = BrokerLikeOptions()
    p.add_argument("store", type=Path, help="the store root (created if missing)")
    p.add_argument("--seed", type=int, default=d.seed, help="the stream's seed")
    p.add_argument("--batch", type=int, default=d.batch, help="messages a batch")
    p.add_argument("--interval", type=float, default=d.interval, help="seconds between batches")
    p.add_argument("--messages", type=int, default=d.messages, help="messages in all (0: no end)")
    p.add_argument("--stop-when-done", action="store_true", help="stop cleanly after --messages")
    p.add_argument("--keys", type=int, default=d.keys, help="distinct shared keys")
    p.add_argument(
        "--commitlog-file-size", type=int, default=d.commitlog_file_size, help="bytes a file"
    )
    p.add_argument("--hash-slot-num", type=int, default=d.hash_slot_num)
    p.add_argument("--index-num", type=int, default=d.index_num)
    p.add_argument(
        "--keep-commitlog-files",
        type=int,
        default=d.keep_commitlog_files,
        help="expire CommitLog files beyond this many, and the index files below them (0: never)",
    )
    p.add_argument("--start-ms", type=int, default=d.start_ms, help="store time of message 0")
    p.add_argument("--step-ms", type=int, default=d.step_ms, help="store time between messages")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's docstring); exit 0 after a clean stop."""
    args = vars(_parser().parse_args(argv))
    store = args.pop("store")
    try:
        options = BrokerLikeOptions(**args)
    except UsageError as exc:
        print(f"broker_like: error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def handler(_signum: int, _frame: Any) -> None:
        stop.set()  # the batch in progress finishes first

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    summary = run(store, options, stop)
    print(json.dumps(summary), flush=True)
    return 0


class BrokerLikeProcess:
    """A broker-like writer running as a child process (:func:`start_broker_like`)."""

    def __init__(self, proc: subprocess.Popen[str], store: Path) -> None:
        self.proc = proc
        self.store = store

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 60) -> dict[str, Any]:
        """SIGTERM and wait: a clean stop (``abort`` removed, lock released); its summary."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float = 60) -> dict[str, Any]:
        """Wait for it to stop by itself (``stop_when_done``); its summary.  One that does
        not stop within ``timeout`` is killed (never left running) and the timeout raised."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise
        if self.proc.returncode != 0:
            raise RuntimeError(f"broker-like writer exited {self.proc.returncode}: {err}")
        summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return summary

    def kill(self, timeout: float = 60) -> None:
        """SIGKILL and wait, as a crash: ``abort`` stays, the kernel frees the lock."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=timeout)

    def __enter__(self) -> BrokerLikeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()


def start_broker_like(
    store: str | os.PathLike[str], *, timeout: float = 60, **options: Any
) -> BrokerLikeProcess:
    """Start ``python -m rmqarrow.testing.broker_like STORE`` with ``options``
    (:class:`BrokerLikeOptions` fields) and return once it is ready (lock held, ``abort``
    present, the first batch written)."""
    BrokerLikeOptions(**options)  # a bad option fails here, not in the child
    argv = [sys.executable, "-m", "rmqarrow.testing.broker_like", str(store)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv += [flag] if value else []
        else:
            argv += [flag, str(value)]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    ready: list[str] = []
    reader = threading.Thread(
        target=lambda: ready.append(proc.stdout.readline() if proc.stdout else "")
    )
    reader.start()
    reader.join(timeout)
    if not ready or not ready[0].startswith("ready "):
        proc.kill()
        _, err = proc.communicate(timeout=60)
        raise RuntimeError(f"broker-like writer did not start: {err.strip() or 'no ready line'}")
    return BrokerLikeProcess(proc, Path(store))


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
