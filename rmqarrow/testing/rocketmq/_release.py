"""A RocketMQ release's jars, resolved by Maven into a cache, and the driver compiled for it.

The cache is ``$RMQARROW_ROCKETMQ_CACHE`` or ``~/.cache/rmqarrow/rocketmq``; each release
gets ``<cache>/<version>/`` holding the generated ``pom.xml``, ``lib/`` (every jar of the
broker, name server, client and tools with their dependencies) and ``driver-<digest>/``
(:file:`RmqDriver.java` compiled against that ``lib/``).  A lock file per release keeps two
test runs from resolving at once; ``lib/`` is filled under a staging name and renamed into
place, so a killed resolution leaves no half cache behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rmqarrow.errors import EngineError, EngineUnavailableError, InvalidValueError
from rmqarrow.testing.rocketmq._maven import copy_release_jars, remove_stale_staging

__all__ = ["CACHE_ENV", "Release", "cache_root", "require_tools", "resolve_release"]

#: environment variable naming the cache directory
CACHE_ENV = "RMQARROW_ROCKETMQ_CACHE"

#: the artifacts a test run needs: name server, broker, the Java client and mqadmin's tools
ARTIFACTS = ("rocketmq-namesrv", "rocketmq-broker", "rocketmq-client", "rocketmq-tools")


@dataclass(frozen=True)
class Release:
    """One resolved release: its version, jars and compiled driver."""

    version: str
    home: Path  #: ``<cache>/<version>``
    lib: Path  #: every jar of the release and its dependencies
    driver: Path  #: the directory holding ``RmqDriver.class``
    resolve_seconds: float  #: 0.0 when the jars came from the cache

    @property
    def classpath(self) -> str:
        """The JVM class path of the release's jars."""
        return str(self.lib / "*")

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


def cache_root() -> Path:
    """Where releases are cached: ``$RMQARROW_ROCKETMQ_CACHE`` or ``~/.cache/rmqarrow/rocketmq``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "rmqarrow" / "rocketmq"


def require_tools(*tools: str) -> None:
    """Raise one line naming whatever of ``tools`` (``java``, ``javac``, ``mvn``) is missing."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise EngineUnavailableError(
            f"the RocketMQ harness needs {', '.join(missing)} on PATH (a JDK 17 and Maven); "
            f"not found: {', '.join(missing)}"
        )


def _check_version(version: str) -> None:
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise InvalidValueError(f"RocketMQ version {version!r}: expected MAJOR.MINOR.PATCH")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _compile_driver(lib: Path, home: Path) -> Path:
    source = resources.files(__package__).joinpath("RmqDriver.java").read_bytes()
    target = home / f"driver-{hashlib.sha256(source).hexdigest()[:12]}"
    if (target / "RmqDriver.class").exists():
        return target
    staging = home / f".driver-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    (staging / "RmqDriver.java").write_bytes(source)
    done = subprocess.run(
        [
            "javac",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-cp",
            str(lib / "*"),
            "-d",
            str(staging),
            str(staging / "RmqDriver.java"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise EngineError(f"javac could not compile RmqDriver against {lib}: {done.stderr.strip()}")
    os.replace(staging, target)
    return target


def resolve_release(version: str, *, cache: Path | None = None) -> Release:
    """The jars of RocketMQ ``version`` (resolved by Maven on first use) and its driver.

    Raises :class:`~rmqarrow.errors.EngineUnavailableError` when java, javac or mvn is
    missing and :class:`~rmqarrow.errors.EngineError` (Maven's first error line) when the
    release does not resolve.
    """
    _check_version(version)
    require_tools("java", "javac", "mvn")
    root = cache if cache is not None else cache_root()
    home = root / version
    lib = home / "lib"
    with _locked(root / f".{version}.lock"):
        # whoever left a staging folder was killed while holding this lock
        remove_stale_staging(home)
        for stale in home.glob(".driver-*"):
            shutil.rmtree(stale, ignore_errors=True)
        started = time.monotonic()
        fetched = False
        if not (lib / f"rocketmq-broker-{version}.jar").is_file():
            copy_release_jars(version, ARTIFACTS, home, expect=f"rocketmq-broker-{version}.jar")
            fetched = True
        driver = _compile_driver(lib, home)
        took = time.monotonic() - started if fetched else 0.0
    return Release(version, home, lib, driver, took)
