"""A name server and a broker of one release as real processes on 127.0.0.1.

:func:`run_broker` is a context manager: it picks free loopback ports, writes the
configuration (the broker's own settings: ``brokerIP1``, ``storePathRootDir``, a small
CommitLog and index geometry so that files roll), starts both JVMs in their own process
groups and waits until each says it booted.  On leaving, whatever happened inside, both
are stopped by pid: SIGTERM (the broker's shutdown hook flushes and closes its store),
then SIGKILL for anything still alive after a grace period.  :meth:`Broker.kill` is the
crash: SIGKILL to the broker at once.

Everything a run writes stays in its ``workdir``: the store, ``ROCKETMQ_HOME`` (and the
logback files that 4.9 reads from it), and the JVMs' ``user.home``, under which RocketMQ
writes its logs.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rmqarrow.errors import EngineError
from rmqarrow.testing.rocketmq._release import Release, require_tools

__all__ = ["DEFAULT_SETTINGS", "Broker", "run_broker"]

#: broker settings of a test run: a 256 KiB CommitLog file, 64 slots x 256 entries an
#: index file (5,416 bytes), small consume-queue files; topics made on first send
DEFAULT_SETTINGS: dict[str, str] = {
    "brokerClusterName": "rmqarrow",
    "brokerName": "broker-a",
    "brokerId": "0",
    "brokerIP1": "127.0.0.1",
    "autoCreateTopicEnable": "true",
    "flushDiskType": "ASYNC_FLUSH",
    "mappedFileSizeCommitLog": str(256 * 1024),
    "mappedFileSizeConsumeQueue": str(300 * 20),
    "maxHashSlotNum": "64",
    "maxIndexNum": "256",
}

#: JVM flags for both processes: a small heap, and the module openings RocketMQ's
#: memory-mapped files need on Java 17 (4.9 unmaps files through
#: DirectByteBuffer's and the JDK Cleaner's internals)
JVM_FLAGS = (
    "-Xms128m",
    "-Xmx256m",
    "-XX:MaxDirectMemorySize=256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
)

# 4.9 configures logback from ROCKETMQ_HOME/conf; 5.x ships its own configuration in the jars
_LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger{{20}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""

_BOOT_TIMEOUT = 90.0
_STOP_GRACE = 60.0


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: where the harness's listening ports are drawn from: below Linux's ephemeral range
#: (32768 and up), whose ports the system hands to outgoing connections, so a port found
#: free cannot be taken by a client's connection before the broker binds it
_PORTS = range(20_000, 32_000)


def _free_port(*, neighbours: tuple[int, ...] = ()) -> int:
    """A free loopback port whose ``neighbours`` (offsets) are free too.

    The broker listens on its port, on port - 2 (its "fast" channel) and on port + 1 (HA).
    """
    rng = random.Random()
    for _ in range(200):
        port = rng.choice(_PORTS)
        if all(_port_free(port + n) for n in (0, *neighbours)):
            return port
    raise EngineError("no free loopback port for the RocketMQ harness")


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    out: Path

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.out.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        kept = [ln for ln in text.splitlines() if "|-INFO in " not in ln and ln.strip()]
        return "\n".join(kept[-lines:])


@dataclass
class Broker:
    """A running name server and broker (see :func:`run_broker`)."""

    release: Release
    workdir: Path
    namesrv_port: int
    broker_port: int
    settings: dict[str, str]
    _procs: list[_Proc] = field(default_factory=list)

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def store(self) -> Path:
        """The broker's store root (``storePathRootDir``)."""
        return Path(self.settings["storePathRootDir"])

    @property
    def home(self) -> Path:
        """``ROCKETMQ_HOME`` and the JVMs' ``user.home`` (logs in ``logs/``)."""
        return self.workdir / "home"

    @property
    def pids(self) -> list[int]:
        return [p.popen.pid for p in self._procs if p.popen.poll() is None]

    def java(self) -> list[str]:
        """The start of a ``java`` command line that runs with this release's class path."""
        return [
            "java",
            *JVM_FLAGS,
            f"-Duser.home={self.home}",
            f"-Drocketmq.home.dir={self.home}",
            "-cp",
            f"{self.release.driver}{os.pathsep}{self.release.classpath}",
        ]

    def env(self) -> dict[str, str]:
        return {**os.environ, "ROCKETMQ_HOME": str(self.home)}

    def _start(self, name: str, main: str, args: list[str], ready: str) -> None:
        out = self.workdir / f"{name}.out"
        with open(out, "wb") as fh:
            popen = subprocess.Popen(
                [*self.java(), main, *args],
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=self.workdir,
                start_new_session=True,
            )
        proc = _Proc(name, popen, out)
        self._procs.append(proc)
        deadline = time.monotonic() + _BOOT_TIMEOUT
        while time.monotonic() < deadline:
            if ready in out.read_text(encoding="utf-8", errors="replace"):
                return
            if popen.poll() is not None:
                raise EngineError(
                    f"RocketMQ {self.release.version} {name} exited ({popen.returncode}) "
                    f"before it booted; its output ends:\n{proc.tail()}"
                )
            time.sleep(0.2)
        raise EngineError(
            f"RocketMQ {self.release.version} {name} did not boot in {_BOOT_TIMEOUT:.0f} s; "
            f"its output ends:\n{proc.tail()}"
        )

    def kill(self) -> None:
        """Crash the broker: SIGKILL, no shutdown hook (the name server keeps running)."""
        for p in self._procs:
            if p.name == "broker" and p.popen.poll() is None:
                os.kill(p.popen.pid, signal.SIGKILL)
                p.popen.wait()

    def stop(self) -> None:
        """Stop the broker, then the name server: SIGTERM, SIGKILL after a grace period."""
        for p in reversed(self._procs):
            if p.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.popen.pid, signal.SIGTERM)
                try:
                    p.popen.wait(_STOP_GRACE)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p.popen.pid, signal.SIGKILL)
                    p.popen.wait()
        self._procs.clear()


def _write_config(workdir: Path, settings: Mapping[str, str]) -> None:
    home = workdir / "home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    for name in ("namesrv", "broker", "tools"):
        log = home / "logs" / f"{name}.log"
        (home / "conf" / f"logback_{name}.xml").write_text(
            _LOGBACK.format(log=log), encoding="utf-8"
        )
    text = "".join(f"{k}={v}\n" for k, v in settings.items())
    (workdir / "broker.properties").write_text(text, encoding="utf-8")


@contextlib.contextmanager
def run_broker(
    release: Release, workdir: Path, settings: Mapping[str, str] | None = None
) -> Iterator[Broker]:
    """Start a name server and a broker of ``release`` with their files in ``workdir``.

    ``settings`` override :data:`DEFAULT_SETTINGS` (any broker or store setting of the
    release).  Both processes are stopped on exit, and on any failure while starting.
    """
    require_tools("java")
    workdir.mkdir(parents=True, exist_ok=True)
    namesrv_port = _free_port()
    broker_port = _free_port(neighbours=(-2, 1))
    store = workdir / "store"
    merged = {
        **DEFAULT_SETTINGS,
        "listenPort": str(broker_port),
        "namesrvAddr": f"127.0.0.1:{namesrv_port}",
        "storePathRootDir": str(store),
        "storePathCommitLog": str(store / "commitlog"),
        **(settings or {}),
    }
    _write_config(workdir, merged)
    (workdir / "namesrv.properties").write_text(f"listenPort={namesrv_port}\n", encoding="utf-8")
    broker = Broker(release, workdir, namesrv_port, broker_port, merged)
    try:
        broker._start(
            "namesrv",
            "org.apache.rocketmq.namesrv.NamesrvStartup",
            ["-c", str(workdir / "namesrv.properties")],
            "boot success",
        )
        broker._start(
            "broker",
            "org.apache.rocketmq.broker.BrokerStartup",
            ["-c", str(workdir / "broker.properties")],
            "boot success",
        )
        yield broker
    finally:
        broker.stop()
