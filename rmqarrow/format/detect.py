"""What a path given on the command line is: one detector for every command.

Operators point tools at whatever they have after a crash: a broker's ``store`` root, its
``store/index`` or ``store/commitlog``, one index file, an exported Parquet dataset, an empty
folder, a text file.  :func:`detect` tells these apart from names and a few header bytes
(stdlib and numpy only, nothing is mapped), so each command can use the right part of a
broker store root by itself and refuse the wrong kind of input with one line naming what it
is and which command takes it (:func:`require_index_store`, :func:`require_commitlog`).

Kinds (:data:`KINDS`): ``index_file``, ``index_dir``, ``broker_root``, ``commitlog_dir``,
``dataset``, ``tiered`` (a tiered ``IndexStoreFile``, recognised by its magic; commands that
read tiered files can accept it), ``empty_dir``, ``other_file``, ``other_dir``, ``missing``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from rmqarrow.errors import StoreNotFoundError, UsageError
from rmqarrow.format.layout import DEFAULT_HASH_SLOT_NUM, HEADER_SIZE, Geometry

__all__ = [
    "KINDS",
    "Target",
    "describe",
    "detect",
    "require_commitlog",
    "require_index_store",
]

KINDS = (
    "index_file",
    "index_dir",
    "broker_root",
    "commitlog_dir",
    "dataset",
    "tiered",
    "empty_dir",
    "other_file",
    "other_dir",
    "missing",
)

#: the first int32 of a tiered ``IndexStoreFile`` (``rmqarrow.tiered``'s BEGIN/END_MAGIC;
#: repeated here because the format layer sits below the tiered package)
_TIERED_MAGICS = (-1127939447, -1127939451)
_COMMITLOG_NAME_DIGITS = 20
_INDEX_NAME_DIGITS = 17
_DATASET_TABLES = ("files", "slots", "entries")
_MANIFEST = "_rmqarrow.json"


@dataclass(frozen=True)
class Target:
    """A detected path: its kind, and for a broker root the parts inside it."""

    kind: str
    path: Path
    index_dir: Path | None = None  # the index directory to read (broker root or index dir)
    commitlog_dir: Path | None = None  # the CommitLog directory (broker root or itself)
    detail: str = ""  # what the detector saw, for messages

    @property
    def is_index(self) -> bool:
        return self.kind in ("index_file", "index_dir", "broker_root")

    @property
    def index_path(self) -> Path:
        """The index file or directory a reader should open."""
        if self.kind == "broker_root" and self.index_dir is not None:
            return self.index_dir
        return self.path


def _is_commitlog_name(name: str) -> bool:
    return len(name) == _COMMITLOG_NAME_DIGITS and name.isascii() and name.isdigit()


def _is_index_name(name: str) -> bool:
    return len(name) == _INDEX_NAME_DIGITS and name.isascii() and name.isdigit()


def _visible(p: Path) -> list[Path]:
    try:
        return [c for c in p.iterdir() if not c.name.startswith(".")]
    except OSError:
        return []


def _file_kind(p: Path) -> tuple[str, str]:
    """``index_file``, ``tiered`` or ``other_file`` for a regular file, from its bytes."""
    try:
        size = p.stat().st_size
        with open(p, "rb") as fh:
            head = fh.read(HEADER_SIZE)
    except OSError as exc:
        return "other_file", f"unreadable ({exc.strerror or exc})"
    if len(head) >= 4 and struct.unpack(">i", head[:4])[0] in _TIERED_MAGICS:
        return "tiered", "starts with the tiered IndexStoreFile magic"
    if size < HEADER_SIZE:
        if _is_index_name(p.name):  # a crash can cut an index file this short
            return "index_file", f"named like an index file, {size} bytes"
        return "other_file", f"{size} bytes, shorter than an index file header"
    if head[:4] == b"PAR1":
        return "other_file", "a Parquet file"
    if _is_commitlog_name(p.name):
        return "other_file", "a CommitLog file (its directory is the broker's store/commitlog)"
    if b"\0" not in head:  # an index header (big-endian ms times, offsets) holds zero bytes
        try:
            head.decode("utf-8")
            return "other_file", "a text file"
        except UnicodeDecodeError:
            pass
    if _is_index_name(p.name):
        return "index_file", "named like an index file"
    if size == Geometry().file_size or Geometry.for_size_default_ratio(size) is not None:
        return "index_file", "sized like an index file"
    begin_ts, end_ts, begin_off, end_off, slots, count = struct.unpack(">qqqqii", head)
    if (begin_ts >= 0 and end_ts >= 0 and 0 <= begin_off <= end_off and
            0 <= slots <= DEFAULT_HASH_SLOT_NUM and 1 <= count <= size // 20):
        return "index_file", "holds a plausible index file header"
    return "other_file", "not an index file (no index header, unknown size)"


def detect(target: str | os.PathLike[str]) -> Target:
    """Classify ``target`` (never raises for an existing or missing path)."""
    p = Path(target)
    if not p.exists():
        return Target("missing", p, detail="no such file or directory")
    if p.is_file():
        kind, detail = _file_kind(p)
        return Target(kind, p, detail=detail)
    if not p.is_dir():
        return Target("other_file", p, detail="not a regular file or directory")
    children = _visible(p)
    names = {c.name for c in children}
    if _MANIFEST in names or any((p / t).is_dir() for t in _DATASET_TABLES):
        return Target("dataset", p, detail="an exported Parquet dataset")
    if (p / "index").is_dir() and ((p / "commitlog").is_dir() or
                                   names & {"checkpoint", "abort", "config", "consumequeue"}):
        commitlog = p / "commitlog"
        return Target("broker_root", p, index_dir=p / "index",
                      commitlog_dir=commitlog if commitlog.is_dir() else None,
                      detail="a broker store root (index/, commitlog/)")
    if (p / "commitlog").is_dir() and not any(_is_index_name(n) for n in names):
        return Target("broker_root", p, commitlog_dir=p / "commitlog",
                      detail="a broker store root without an index/ directory")
    files = [c for c in children if c.is_file()]
    if any(_is_commitlog_name(c.name) for c in files) and not any(
            _is_index_name(c.name) for c in files):
        return Target("commitlog_dir", p, commitlog_dir=p, detail="a CommitLog directory")
    if not children:
        return Target("empty_dir", p, detail="an empty directory")
    kinds = {_file_kind(c)[0] for c in files[:64]}
    if "tiered" in kinds and "index_file" not in kinds:
        return Target("tiered", p, detail="a directory of tiered IndexStoreFiles")
    if "index_file" in kinds or any(_is_index_name(c.name) for c in files):
        return Target("index_dir", p, index_dir=p, detail="a directory of index files")
    if not files:
        return Target("other_dir", p, detail="a directory with no files (only folders)")
    return Target("other_dir", p, detail="a directory without index files")


_INSTEAD = {
    "dataset": "an exported Parquet dataset: query it with `rmqarrow sql`, `rmqarrow query "
               "--engine duckdb`, or turn it back into index files with `rmqarrow import`",
    "commitlog_dir": "a CommitLog directory, not index files: build an index from it with "
                     "`rmqarrow build STORE --from-commitlog DIR`, or pass it as --commitlog",
    "tiered": "a tiered IndexStoreFile (RocketMQ's tiered store), not a local index file",
    "empty_dir": "an empty directory: no index files to read",
    "other_file": "not an index file",
    "other_dir": "not a store: no index files in it",
    "missing": "no such file or directory",
}


def describe(t: Target) -> str:
    """One phrase naming what ``t`` is and what to do with it."""
    text = _INSTEAD.get(t.kind, t.detail)
    if t.kind in ("other_file", "other_dir") and t.detail:
        text = f"{text} ({t.detail})"
    return text


def require_index_store(target: str | os.PathLike[str], *, allow_file: bool = True,
                        say: list[str] | None = None) -> Target:
    """The index file or directory to read for ``target``, or an error naming what it is.

    A broker store root resolves to its ``index/`` directory; a line saying so is appended to
    ``say`` (the command line prints it once on stderr).  A missing path raises
    :class:`StoreNotFoundError`, any other wrong kind :class:`UsageError`.
    """
    t = detect(target)
    if t.kind == "missing":
        raise StoreNotFoundError(f"{t.path}: no such store directory or index file")
    if t.kind == "broker_root":
        if t.index_dir is None:
            raise UsageError(
                f"{t.path}: a broker store root without an index/ directory; build one with "
                f"`rmqarrow build {t.path / 'index'} --from-commitlog {t.commitlog_dir}`"
            )
        if not any(_visible(t.index_dir)):
            raise UsageError(f"{t.path}: a broker store root whose index/ directory is empty: "
                             "no index files to read")
        if say is not None:
            say.append(f"note: {t.path} is a broker store root; reading its index files in "
                       f"{t.index_dir}")
        return t
    if t.kind == "index_dir" or (t.kind == "index_file" and allow_file):
        return t
    if t.kind == "index_file":
        raise UsageError(f"{t.path}: one index file; this command takes a store directory")
    raise UsageError(f"{t.path}: {describe(t)}")


def require_commitlog(target: str | os.PathLike[str], *, say: list[str] | None = None) -> Path:
    """The CommitLog directory for ``target`` (a broker root resolves to its ``commitlog/``);
    an error when it holds no CommitLog file (20-digit names)."""
    t = detect(target)
    if t.kind == "missing":
        raise StoreNotFoundError(f"{t.path}: no such CommitLog directory")
    if t.kind == "broker_root" and t.commitlog_dir is not None:
        if say is not None:
            say.append(f"note: {t.path} is a broker store root; reading its CommitLog in "
                       f"{t.commitlog_dir}")
        t = detect(t.commitlog_dir)
        if t.kind == "empty_dir":
            raise UsageError(f"{t.path}: the CommitLog directory holds no CommitLog files "
                             "(20-digit names such as 00000000000000000000)")
    if t.kind == "commitlog_dir":
        return t.path
    if t.kind == "empty_dir":
        raise UsageError(f"{t.path}: an empty directory, no CommitLog files (20-digit names "
                         "such as 00000000000000000000)")
    if t.kind in ("index_dir", "index_file"):
        raise UsageError(f"{t.path}: index files, not a CommitLog; pass the broker's "
                         "store/commitlog directory")
    raise UsageError(f"{t.path}: {describe(t)}; expected a CommitLog directory (files with "
                     "20-digit names, the broker's store/commitlog)")
