"""Where RocketMQ's ``IndexFile`` comes from (a released jar or a source checkout), the JDK,
and the harness's driver compiled against it.

A release (the default) is ``org.apache.rocketmq:rocketmq-store`` from Maven Central with
its dependencies: Maven copies them into ``<cache>/<version>/lib`` (the cache is
``$RMQARROW_ANCHOR_CACHE`` or ``~/.cache/rmqarrow/rocketmq-store``), from a small generated
``pom.xml``, under the project's writer lock so two runs never resolve the same release at
once; ``lib`` is filled under a staging name and renamed into place, so a killed
resolution leaves nothing the next run would take for a complete one.  The driver then
runs RocketMQ's released classes as they are: its ``IndexFile``, its ``DefaultMappedFile``
and its logging.  A checkout (``--rocketmq PATH``) compiles the four source files
``IndexFile`` needs with the harness's stand-ins for the rest (``java/``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rmqarrow._lock import writer_lock
from rmqarrow.errors import EngineError, RmqArrowError
from rmqarrow.testing.rocketmq._maven import copy_release_jars, remove_stale_staging

__all__ = [
    "CACHE_ENV",
    "DEFAULT_RELEASE",
    "DRIVER_CLASS",
    "INDEX_FILE",
    "ROCKETMQ_SOURCES",
    "STORE_ARTIFACT",
    "AnchorSetupError",
    "Build",
    "Checkout",
    "Jdk",
    "Release",
    "cache_root",
    "compile_anchor",
    "find_checkout",
    "find_jdk",
    "resolve_release",
]

#: The newest RocketMQ release whose rocketmq-store resolves from Maven Central with all
#: its dependencies (checked when it was pinned); ``--release`` picks another.
DEFAULT_RELEASE = "5.5.1"
STORE_ARTIFACT = "org.apache.rocketmq:rocketmq-store"
#: Environment variable naming the folder releases are cached in.
CACHE_ENV = "RMQARROW_ANCHOR_CACHE"

#: Where RocketMQ keeps the class under test, relative to the checkout's root.
INDEX_FILE = "store/src/main/java/org/apache/rocketmq/store/index/IndexFile.java"

#: RocketMQ's files compiled as they are in the checkout: IndexFile, its header, the
#: reference counting every mapped file inherits, and the class holding its logger's name.
ROCKETMQ_SOURCES = (
    INDEX_FILE,
    "store/src/main/java/org/apache/rocketmq/store/index/IndexHeader.java",
    "store/src/main/java/org/apache/rocketmq/store/ReferenceResource.java",
    "common/src/main/java/org/apache/rocketmq/common/constant/LoggerName.java",
)

#: The harness's own Java: the driver and the stand-ins (see java/ and README.md).
JAVA_DIR = Path(__file__).resolve().parent / "java"
DRIVER_CLASS = "rmqarrow.anchor.IndexFileDriver"
DRIVER_SOURCE = JAVA_DIR / (DRIVER_CLASS.replace(".", "/") + ".java")
CLONE_HINT = "a clone of https://github.com/apache/rocketmq"


class AnchorSetupError(RmqArrowError, RuntimeError):
    """The anchor cannot run here: no usable RocketMQ checkout, no JDK, or no build."""


def git_blob_id(data: bytes) -> str:
    """The id git gives a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _git(root: Path, *args: str) -> str | None:
    """``git -C root args`` output, or None when git or the repository is not there."""
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


@dataclass(frozen=True)
class Checkout:
    """A RocketMQ source checkout and the identity of the files the anchor compiles."""

    root: Path
    #: HEAD's commit when the checkout is a git work tree, else None.
    commit: str | None
    #: Whether git reports the compiled files changed from HEAD (None: not a git tree).
    modified: bool | None
    #: Each compiled file's git blob id, so a record says exactly which code ran.
    blobs: dict[str, str] = field(default_factory=dict)

    def source(self, rel: str) -> Path:
        return self.root / rel


def find_checkout(value: str | None) -> Checkout:
    """The checkout at ``value``; each way it can be unusable is one clear error."""
    if not value or not value.strip():
        raise AnchorSetupError(
            "--rocketmq is empty: give the root of a RocketMQ source checkout "
            f"({CLONE_HINT}), or leave the option out to run the released jar"
        )
    root = Path(value).expanduser()
    if not root.is_dir():
        raise AnchorSetupError(f"ROCKETMQ={value}: no such folder; expected {CLONE_HINT}")
    if not (root / INDEX_FILE).is_file():
        raise AnchorSetupError(
            f"ROCKETMQ={value} is not a RocketMQ checkout: no IndexFile.java at "
            f"{INDEX_FILE}; give the root of {CLONE_HINT}"
        )
    missing = [rel for rel in ROCKETMQ_SOURCES if not (root / rel).is_file()]
    if missing:
        raise AnchorSetupError(
            f"ROCKETMQ={value} has IndexFile.java but not {missing[0]}, which it needs; "
            f"expected a complete checkout ({CLONE_HINT}, 5.x)"
        )
    blobs = {rel: git_blob_id((root / rel).read_bytes()) for rel in ROCKETMQ_SOURCES}
    commit = _git(root, "rev-parse", "HEAD") if (root / ".git").exists() else None
    modified = None
    if commit is not None:
        status = _git(root, "status", "--porcelain", "--", *ROCKETMQ_SOURCES)
        modified = None if status is None else bool(status)
    return Checkout(root.resolve(), commit, modified, blobs)


@dataclass(frozen=True)
class Jdk:
    javac: str
    java: str
    version: str  # javac's own, e.g. "javac 17.0.15"


def find_jdk() -> Jdk:
    """``javac`` and ``java`` from PATH, refusing a JDK older than 17."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None:
        raise AnchorSetupError(
            "javac not found on PATH: the anchor compiles RocketMQ's IndexFile and needs a "
            "JDK 17 or newer (e.g. apt-get install openjdk-17-jdk-headless)"
        )
    if java is None:
        raise AnchorSetupError(
            f"java not found on PATH (javac is {javac}): install the JDK's runtime too"
        )
    proc = subprocess.run([javac, "-version"], capture_output=True, text=True, check=False)
    version = (proc.stdout or proc.stderr).strip()
    m = re.search(r"(\d+)(?:\.\d+)*", version)
    if proc.returncode != 0 or m is None or int(m.group(1)) < 17:
        raise AnchorSetupError(f"{javac} reports {version!r}: expected JDK 17 or newer")
    return Jdk(javac, java, version)


_VERSION = re.compile(r"\d+\.\d+\.\d+")


@dataclass(frozen=True)
class Release:
    """A RocketMQ release's rocketmq-store jar and its dependencies, resolved by Maven."""

    version: str
    #: ``<cache>/<version>``: the generated pom.xml, maven.log, and lib/
    home: Path
    #: every jar the release's store needs at run time
    lib: Path
    #: the rocketmq-store jar itself, and its sha256 (the record says exactly what ran)
    store_jar: Path
    store_jar_sha256: str
    #: seconds Maven took in this run; 0.0 when the cache already held the release
    resolve_seconds: float

    @property
    def classpath(self) -> list[str]:
        return [str(self.lib / "*")]


def cache_root() -> Path:
    """``$RMQARROW_ANCHOR_CACHE``, or ``~/.cache/rmqarrow/rocketmq-store``."""
    env = os.environ.get(CACHE_ENV, "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache/rmqarrow/rocketmq-store"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_release(
    version: str, cache: Path | None = None, notify: Callable[[str], None] | None = None
) -> Release:
    """RocketMQ ``version``'s rocketmq-store jar with its dependencies, in the cache (Maven
    fetches them from Maven Central on first use, after telling ``notify``); each way this
    can fail is one line."""
    if not _VERSION.fullmatch(version):
        raise AnchorSetupError(
            f"--release {version!r}: expected a RocketMQ release as MAJOR.MINOR.PATCH, "
            f"e.g. {DEFAULT_RELEASE}"
        )
    root = cache if cache is not None else cache_root()
    home = root / version
    lib = home / "lib"
    store_jar = lib / f"rocketmq-store-{version}.jar"
    started = time.monotonic()
    resolved = False
    try:
        root.mkdir(parents=True, exist_ok=True)
        with writer_lock(home, wait=True):
            # A staging folder left here was its run's, killed while it held this lock.
            remove_stale_staging(home)
            if not store_jar.is_file():
                _resolve(version, home, store_jar, notify)
                resolved = True
    except OSError as e:
        raise AnchorSetupError(
            f"cannot use the RocketMQ jar cache {root} ({e}); set {CACHE_ENV} to a writable folder"
        ) from None
    took = time.monotonic() - started if resolved else 0.0
    return Release(version, home, lib, store_jar, _sha256(store_jar), took)


def _resolve(
    version: str,
    home: Path,
    store_jar: Path,
    notify: Callable[[str], None] | None,
) -> None:
    if shutil.which("mvn") is None:
        raise AnchorSetupError(
            f"mvn not found on PATH: the anchor fetches RocketMQ {version}'s "
            f"{STORE_ARTIFACT} jar from Maven Central with Maven (e.g. apt-get install "
            "maven), or give a source checkout with --rocketmq PATH"
        )
    if notify is not None:
        notify(
            f"RocketMQ {version}: fetching {STORE_ARTIFACT}:{version} and its dependencies "
            f"with Maven into {home} (first use only) ..."
        )
    try:
        copy_release_jars(version, [STORE_ARTIFACT.split(":")[1]], home, expect=store_jar.name)
    except EngineError as e:
        raise AnchorSetupError(f"{e}; pick another release with --release X.Y.Z") from None


@dataclass(frozen=True)
class Build:
    classes: Path
    jdk: Jdk
    reused: bool
    #: what the JVM runs with: the compiled classes, then the release's jars (if any)
    classpath: list[str]
    #: JVM flags RocketMQ's own code needs on this JDK (added before the user's options)
    jvm_flags: list[str] = field(default_factory=list)


#: RocketMQ 4.x was built for Java 8: its MappedFile unmaps a buffer through
#: DirectByteBuffer's internals, which JDK 17 opens only when asked (as 4.x's own start
#: scripts ask on a newer JDK).
JAVA8_OPENS = [
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in ("java.nio", "sun.nio.ch", "jdk.internal.ref")
]


def _harness_sources() -> list[Path]:
    return sorted(JAVA_DIR.rglob("*.java"))


def compile_anchor(source: Checkout | Release, jdk: Jdk, build_dir: Path) -> Build:
    """The harness's driver compiled into ``build_dir/classes``: against a release's jars
    (RocketMQ's classes run as released), or with a checkout's files (read in place, never
    copied) and the harness's stand-ins.  An earlier build of exactly the same inputs is
    reused."""
    if isinstance(source, Release):
        sources = [DRIVER_SOURCE]
        extra = source.classpath
        identity: dict[str, object] = {
            "release": source.version,
            "store_jar_sha256": source.store_jar_sha256,
        }
        what = f"the driver against RocketMQ {source.version}'s {source.store_jar.name}"
        flags = JAVA8_OPENS if int(source.version.split(".")[0]) < 5 else []
    else:
        sources = [source.source(rel) for rel in ROCKETMQ_SOURCES] + _harness_sources()
        extra = []
        identity = {"rocketmq_blobs": source.blobs}
        flags = []
        what = (
            f"RocketMQ's IndexFile from {source.root} with the harness's stand-ins "
            "(RocketMQ 5.x store/logfile layout expected)"
        )
    digest = hashlib.sha256(jdk.version.encode())
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    stamp = {"sources": digest.hexdigest(), **identity, "javac": jdk.version}
    classes = build_dir / "classes"
    stamp_path = build_dir / "build.json"
    driver = classes / (DRIVER_CLASS.replace(".", "/") + ".class")
    classpath = [str(classes), *extra]
    if driver.is_file() and stamp_path.is_file():
        try:
            if json.loads(stamp_path.read_text()) == stamp:
                return Build(classes, jdk, True, classpath, flags)
        except ValueError:
            pass
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    stamp_path.unlink(missing_ok=True)
    cmd = [
        jdk.javac,
        "--release",
        "17",
        "-encoding",
        "UTF-8",
        "-nowarn",
        "-proc:none",
        *(["-cp", os.pathsep.join(extra)] if extra else []),
        "-d",
        str(classes),
        *map(str, sources),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log = build_dir / "javac.log"
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        first = next(
            (ln for ln in (proc.stderr + proc.stdout).splitlines() if "error" in ln),
            f"javac exited {proc.returncode}",
        )
        raise AnchorSetupError(
            f"javac could not compile {what}: {first.strip()} (full output: {log})"
        )
    stamp_path.write_text(json.dumps(stamp, indent=1))
    return Build(classes, jdk, False, classpath, flags)
