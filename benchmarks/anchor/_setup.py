"""The RocketMQ checkout, the JDK, and RocketMQ's ``IndexFile`` compiled from the checkout."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from rmqarrow.errors import RmqArrowError

__all__ = [
    "DRIVER_CLASS",
    "INDEX_FILE",
    "ROCKETMQ_SOURCES",
    "AnchorSetupError",
    "Build",
    "Checkout",
    "Jdk",
    "compile_anchor",
    "find_checkout",
    "find_jdk",
]

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
            "no RocketMQ checkout given: run `make bench-anchor ROCKETMQ=/path/to/rocketmq` "
            f"with {CLONE_HINT} (or pass --rocketmq PATH)"
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


@dataclass(frozen=True)
class Build:
    classes: Path
    jdk: Jdk
    reused: bool


def _harness_sources() -> list[Path]:
    return sorted(JAVA_DIR.rglob("*.java"))


def compile_anchor(checkout: Checkout, jdk: Jdk, build_dir: Path) -> Build:
    """RocketMQ's files (read in place, never copied) and the harness's Java, compiled into
    ``build_dir/classes``; an earlier build of exactly the same sources is reused."""
    sources = [checkout.source(rel) for rel in ROCKETMQ_SOURCES] + _harness_sources()
    digest = hashlib.sha256(jdk.version.encode())
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    stamp = {"sources": digest.hexdigest(), "rocketmq_blobs": checkout.blobs, "javac": jdk.version}
    classes = build_dir / "classes"
    stamp_path = build_dir / "build.json"
    driver = classes / (DRIVER_CLASS.replace(".", "/") + ".class")
    if driver.is_file() and stamp_path.is_file():
        try:
            if json.loads(stamp_path.read_text()) == stamp:
                return Build(classes, jdk, reused=True)
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
            f"javac could not compile RocketMQ's IndexFile from {checkout.root} with the "
            f"harness's stand-ins (RocketMQ 5.x store/logfile layout expected): {first.strip()}"
            f" (full output: {log})"
        )
    stamp_path.write_text(json.dumps(stamp, indent=1))
    return Build(classes, jdk, reused=False)
