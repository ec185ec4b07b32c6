"""What a path is: the one detector every command, engine and opener asks.

Operators point tools at whatever they have after a crash: a broker's ``store`` root, its
``store/index`` or ``store/commitlog``, one index file, an exported Parquet dataset, tiered
index files, an empty folder, a text file.  :func:`detect` tells these apart from names, a
few header bytes and a dataset's manifest (stdlib only, nothing is mapped), so each command
can use the right part of a broker store root by itself and refuse the wrong kind of input
with one line naming what it is and which command takes it (:func:`require_index_store`,
:func:`require_commitlog`).  Notes (a broker root resolved to its ``index/``) go to the
``rmqarrow.format.detect`` logger.

Kinds (:data:`KINDS`): ``index_file``, ``index_dir``, ``broker_root``, ``commitlog_dir``,
``dataset`` (an exported Parquet dataset of index files), ``tiered`` (RocketMQ's tiered
``IndexStoreFile``: one file of either form or a folder of them, see :attr:`Target.form`),
``tiered_dataset``, ``rocksdb`` (RocketMQ's RocksDB message index, RIP-82: a RocksDB
directory, or a broker store root holding ``rocksdbstore/`` and no ``index/``),
``rocksdb_dataset``, ``empty_dir``, ``other_file``, ``other_dir``, ``missing``.

A broker store root holding both ``index/`` and ``rocksdbstore/`` stays a ``broker_root``
(its IndexFiles are what every command reads by default) and names the database in
:attr:`Target.rocksdb_dir`; ``rmqarrow.open(root, index="rocksdb")`` and ``--index
rocksdb`` pick it instead.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rmqarrow._formats import known_kinds, plugin_for_kind, sniff
from rmqarrow._paths import local_path
from rmqarrow._store_folders import ROCKSDB_DIR_NAMES
from rmqarrow._vocab import DATASET_KINDS, INDEX_KINDS, Format, Kind
from rmqarrow.errors import DatasetError, StoreNotFoundError, UsageError
from rmqarrow.format.layout import DEFAULT_HASH_SLOT_NUM, HEADER_SIZE, Geometry
from rmqarrow.tiered.layout import binary as tl
from rmqarrow.tiered.layout.naming import INDEX_TOPIC, LOCAL_DIR_NAME, parse_segment_name

__all__ = [
    "DATASET_KINDS",
    "KINDS",
    "KIND_NAMES",
    "MANIFEST_NAME",
    "PIN_TABLES",
    "ROCKSDB_DATASET_FORMAT",
    "ROCKSDB_DIR_NAMES",
    "TIERED_DATASET_FORMAT",
    "Target",
    "TieredForm",
    "describe",
    "detect",
    "instead_of",
    "require_commitlog",
    "require_index_source",
    "require_index_store",
]

KINDS = tuple(Kind)

_log = logging.getLogger(__name__)

#: What a tiered path holds: one local or uploaded file, or a folder of them.
TieredForm = Literal["unsealed", "compacted", "local-dir", "segment-dir"]

_TIERED_MAGICS = (tl.BEGIN_MAGIC, tl.END_MAGIC)
_COMMITLOG_NAME_DIGITS = 20
_INDEX_NAME_DIGITS = 17
_DATASET_TABLES = ("files", "slots", "entries")
#: An exported dataset's manifest, and the format it states for a tiered dataset.
MANIFEST_NAME = "_rmqarrow.json"
TIERED_DATASET_FORMAT = "rmqarrow-tiered-dataset"
#: The format an exported RocksDB-index dataset's manifest states.
ROCKSDB_DATASET_FORMAT = "rmqarrow-rocksdb-dataset"
#: Each dataset format's pin table: a Delta table whose commit finishes a run and pins
#: the versions of the others (:mod:`rmqarrow.converters.delta.run`).
PIN_TABLES = {
    "rmqarrow-dataset": "files",
    TIERED_DATASET_FORMAT: "tiered_files",
    ROCKSDB_DATASET_FORMAT: "rocksdb_records",
}
#: Formats of the kinds: which family of readers and engines a path belongs to.
_FORMATS: dict[str, Format] = {
    Kind.INDEX_FILE: Format.INDEX,
    Kind.INDEX_DIR: Format.INDEX,
    Kind.BROKER_ROOT: Format.INDEX,
    Kind.DATASET: Format.INDEX,
    Kind.TIERED: Format.TIERED,
    Kind.TIERED_DATASET: Format.TIERED,
    Kind.ROCKSDB: Format.ROCKSDB,
    Kind.ROCKSDB_DATASET: Format.ROCKSDB,
}


@dataclass(frozen=True)
class Target:
    """A detected path: its kind, and for a broker root the parts inside it."""

    kind: str  # a Kind, or the kind a registered format adds
    path: Path
    index_dir: Path | None = None  # the index directory to read (broker root or index dir)
    commitlog_dir: Path | None = None  # the CommitLog directory (broker root or itself)
    detail: str = ""  # what the detector saw, for messages
    form: TieredForm | None = None  # for kind "tiered": which file form, or which folder
    rocksdb_dir: Path | None = None  # the RocksDB index database (kind rocksdb, broker root)
    instead: str = ""  # for a folder that is no store: the stores one level down, to pass

    def __post_init__(self) -> None:
        # text from a caller (a kind's name) becomes the member, and an unknown one fails here
        if self.kind not in Kind.__members__.values():
            if self.kind not in set(known_kinds()):
                raise ValueError(f"{self.kind!r} is not a kind of path any format reads")
            return  # a kind a registered format adds: its own name
        object.__setattr__(self, "kind", Kind(self.kind))

    @property
    def is_index(self) -> bool:
        """Native index files (one, a directory of them, or a broker root's ``index/``)."""
        return self.kind in INDEX_KINDS

    @property
    def is_dataset(self) -> bool:
        """An exported Parquet dataset (of index files or of tiered files)."""
        return self.kind in ("dataset", "tiered_dataset")

    @property
    def format(self) -> str | None:
        """``"index"`` (RocketMQ's IndexFile), ``"tiered"`` (RIP-65), ``"rocksdb"`` (RIP-82),
        or None for the rest."""
        known = _FORMATS.get(self.kind)
        if known is not None:
            return known
        plugin = plugin_for_kind(self.kind)
        return None if plugin is None else plugin.name

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


def _tiered_form(head: bytes, size: int) -> TieredForm | None:
    """The form of a tiered file from its first bytes, or None when it is not one.  The
    magic alone tells a tiered file (a classic file starts with a positive timestamp); a
    damaged one is then reported by opening it, not mistaken for something else."""
    if len(head) < tl.INT32.size or tl.INT32.unpack_from(head, 0)[0] not in _TIERED_MAGICS:
        return None
    return "compacted" if tl.compacted_slot_num(head, size) is not None else "unsealed"


def _file_kind(p: Path) -> tuple[Kind, str, TieredForm | None]:
    """``index_file``, ``tiered`` or ``other_file`` for a regular file, from its bytes."""
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):  # a pipe or a device: opening it may block
            return Kind.OTHER_FILE, "not a regular file", None
        size = st.st_size
        head = b""
        if size:  # an empty file has no header to read (nor has /proc's, which may block)
            with open(p, "rb") as fh:
                head = fh.read(max(HEADER_SIZE, tl.HEADER_SIZE + tl.SLOT_SIZE))
    except OSError as exc:
        return Kind.OTHER_FILE, f"unreadable ({exc.strerror or exc})", None
    form = _tiered_form(head, size)
    if form is not None:
        return Kind.TIERED, f"a tiered IndexStoreFile ({form})", form
    kind, detail = _classic_file_kind(p, head[:HEADER_SIZE], size)
    return kind, detail, None


def _classic_file_kind(p: Path, head: bytes, size: int) -> tuple[Kind, str]:
    """``index_file`` or ``other_file`` for a file that is not tiered."""
    if size < HEADER_SIZE:
        if _is_index_name(p.name):  # a crash can cut an index file this short
            return Kind.INDEX_FILE, f"named like an index file, {size} bytes"
        return Kind.OTHER_FILE, f"{size} bytes, shorter than an index file header"
    if head[:4] == b"PAR1":
        return Kind.OTHER_FILE, "a Parquet file"
    if _is_commitlog_name(p.name):
        return Kind.OTHER_FILE, "a CommitLog file (its directory is the broker's store/commitlog)"
    if b"\0" not in head:  # an index header (big-endian ms times, offsets) holds zero bytes
        try:
            head.decode("utf-8")
            return Kind.OTHER_FILE, "a text file"
        except UnicodeDecodeError:
            pass
    if _is_index_name(p.name):
        return Kind.INDEX_FILE, "named like an index file"
    sized = size == Geometry().file_size or Geometry.for_size_default_ratio(size) is not None
    # by size alone only with a header that can be one: its first byte is the top byte of
    # a big-endian begin timestamp in ms, 0 for every file RocketMQ writes (and for one it
    # never wrote); a picture, an archive or a PDF of that size starts with its magic bytes
    if sized and head[0] == 0:
        return Kind.INDEX_FILE, "sized like an index file"
    begin_ts, end_ts, begin_off, end_off, slots, count = struct.unpack(">qqqqii", head)
    if (
        begin_ts >= 0
        and end_ts >= 0
        and begin_off >= 0
        and end_off >= 0
        and 0 <= slots <= DEFAULT_HASH_SLOT_NUM
        and 1 <= count <= size // 20
    ):
        return Kind.INDEX_FILE, "holds a plausible index file header"
    return Kind.OTHER_FILE, "no index header, unknown size"


def _manifest_format(p: Path) -> str | None:
    """The ``format`` a dataset's manifest states (None when absent or unreadable)."""
    try:
        doc = json.loads((p / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # unreadable, not JSON, hostile nesting
        return None
    value = doc.get("format") if isinstance(doc, dict) else None
    return value if isinstance(value, str) else None


def _is_local_tiered(q: Path) -> bool:
    if not (q.name.isascii() and q.name.isdigit()) or not q.is_file():
        return False
    try:
        with open(q, "rb") as fh:
            head = fh.read(tl.HEADER_SIZE + tl.SLOT_SIZE)
        return _tiered_form(head, q.stat().st_size) is not None
    except OSError:
        return False


def _tiered_folder(p: Path, children: list[Path]) -> TieredForm | None:
    """``local-dir``: a ``tiered_index_file/`` folder, a folder holding one, or a folder of
    numerically named tiered files; ``segment-dir``: a folder of uploaded segments (names
    ``<md5 prefix><20-digit base offset>``); None otherwise."""
    local = p / LOCAL_DIR_NAME
    if local.is_dir() and any(_is_local_tiered(q) for q in _visible(local)):
        return "local-dir"
    if any(_is_local_tiered(q) for q in children):
        return "local-dir"
    if any(parse_segment_name(q.name) is not None and q.is_file() for q in children):
        return "segment-dir"
    return None


def _is_delta_table(p: Path) -> bool:
    """A Delta table's folder (its log folder is there): a tiered or RocksDB dataset's
    pin table tells its kind when no manifest does."""
    return (p / "_delta_log").is_dir()


def _is_rocksdb_dir(p: Path) -> bool:
    """A RocksDB database: ``CURRENT``, a ``MANIFEST-*`` and an ``OPTIONS-*`` file."""
    try:
        names = [c.name for c in p.iterdir()]
    except OSError:
        return False
    return (
        "CURRENT" in names
        and any(n.startswith("MANIFEST-") for n in names)
        and any(n.startswith("OPTIONS-") for n in names)
    )


def _rocksdb_in(p: Path) -> Path | None:
    """The RocksDB index database of a broker store root, or None."""
    for name in ROCKSDB_DIR_NAMES:
        if _is_rocksdb_dir(p / name):
            return p / name
    return None


def detect(target: str | os.PathLike[str]) -> Target:
    """Classify ``target`` (never raises for an existing or missing path; a URI other
    than ``file://`` is refused, see :func:`rmqarrow._paths.local_path`).  What no
    built-in format holds is offered to the registered formats' detectors."""
    p = local_path(target)
    found = _detect(p)
    if found.kind in (Kind.OTHER_FILE, Kind.OTHER_DIR):
        sniffed = sniff(p)
        if sniffed is not None:
            return Target(sniffed[0], p, detail=sniffed[1])
    return found


#: what a folder holding only folders is searched for, one level down, to name the one
#: an operator meant (the parent of a store root, of a RocksDB directory, of a dataset)
_STORE_KINDS = (
    Kind.BROKER_ROOT,
    Kind.INDEX_DIR,
    Kind.TIERED,
    Kind.ROCKSDB,
    Kind.DATASET,
    Kind.TIERED_DATASET,
    Kind.ROCKSDB_DATASET,
)
#: how many of those folders are looked into (a folder of thousands says nothing)
_LOOK_BELOW = 32


#: the details of a folder that is no store and says nothing more (another one, such as a
#: tiered broker's folder above its segments, says where to go itself)
_FOLDERS_ONLY = "a directory with no files (only folders)"
_NO_INDEX_FILES = "a directory without index files"


def instead_of(t: Target) -> str:
    """For a path that is no store: what to pass instead, when the detector saw one (a
    folder of renamed tiered files) or a store is one level down ("" when neither).
    Looked for only here, when a message needs it: detecting a folder reads no folder
    below it."""
    if t.instead or t.detail not in (_FOLDERS_ONLY, _NO_INDEX_FILES):
        return t.instead
    return _stores_below(_visible(t.path))


def _stores_below(children: list[Path]) -> str:
    """The stores among ``children``'s folders (one level down), as what to pass instead
    ("" when there is none)."""
    found = []
    for child in sorted(c for c in children if c.is_dir())[:_LOOK_BELOW]:
        t = _detect(child)
        if t.kind in _STORE_KINDS:
            found.append(f"{child} ({t.detail})")
        elif _detect(child / "index").kind == Kind.INDEX_DIR:
            found.append(f"{child / 'index'} (a directory of index files)")
    if not found:
        return ""
    # naming three without saying there are more hides the one the operator may want
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (
        f"it holds {', '.join(found[:3])}{more}: "
        f"pass {'one of these' if len(found) > 1 else 'that'}"
    )


def _detect(p: Path) -> Target:
    if not p.exists():
        return Target(Kind.MISSING, p, detail="no such file or directory")
    if p.is_file():
        kind, detail, form = _file_kind(p)
        return Target(kind, p, detail=detail, form=form)
    if not p.is_dir():
        return Target(Kind.OTHER_FILE, p, detail="not a regular file or directory")
    children = _visible(p)
    names = {c.name for c in children}
    manifest = _manifest_format(p) if MANIFEST_NAME in names else None
    if manifest == TIERED_DATASET_FORMAT or (
        manifest is None and _is_delta_table(p / PIN_TABLES[TIERED_DATASET_FORMAT])
    ):
        return Target(Kind.TIERED_DATASET, p, detail="an exported Parquet dataset of tiered files")
    if manifest == ROCKSDB_DATASET_FORMAT or (
        manifest is None and _is_delta_table(p / PIN_TABLES[ROCKSDB_DATASET_FORMAT])
    ):
        return Target(
            Kind.ROCKSDB_DATASET, p, detail="an exported Parquet dataset of a RocksDB message index"
        )
    if _is_rocksdb_dir(p):
        return Target(Kind.ROCKSDB, p, rocksdb_dir=p, detail="a RocksDB message index (RIP-82)")
    rocksdb = _rocksdb_in(p)
    if rocksdb is not None and not (p / "index").is_dir():
        commitlog = p / "commitlog"
        return Target(
            Kind.ROCKSDB,
            p,
            rocksdb_dir=rocksdb,
            commitlog_dir=commitlog if commitlog.is_dir() else None,
            detail=f"a broker store root with a RocksDB message index ({rocksdb.name}/)",
        )
    if MANIFEST_NAME in names or any((p / t).is_dir() for t in _DATASET_TABLES):
        return Target(Kind.DATASET, p, detail="an exported Parquet dataset")
    if (p / "index").is_dir() and (
        (p / "commitlog").is_dir() or names & {"checkpoint", "abort", "config", "consumequeue"}
    ):
        commitlog = p / "commitlog"
        return Target(
            Kind.BROKER_ROOT,
            p,
            index_dir=p / "index",
            commitlog_dir=commitlog if commitlog.is_dir() else None,
            detail="a broker store root (index/, commitlog/)",
            rocksdb_dir=rocksdb,
        )
    if (p / "commitlog").is_dir() and not any(_is_index_name(n) for n in names):
        return Target(
            Kind.BROKER_ROOT,
            p,
            commitlog_dir=p / "commitlog",
            detail="a broker store root without an index/ directory",
        )
    files = [c for c in children if c.is_file()]
    if any(_is_commitlog_name(c.name) for c in files) and not any(
        _is_index_name(c.name) for c in files
    ):
        return Target(Kind.COMMITLOG_DIR, p, commitlog_dir=p, detail="a CommitLog directory")
    if not children:
        hint = _tiered_hint(p)  # an emptied tiered_index_file/: a tiered broker's clean stop
        if hint is not None:
            return Target(Kind.OTHER_DIR, p, detail=hint)
        return Target(Kind.EMPTY_DIR, p, detail="an empty directory")
    if not any(_is_index_name(c.name) for c in files):
        form = _tiered_folder(p, children)
        if form is not None:
            return Target(Kind.TIERED, p, detail=f"tiered IndexStoreFiles ({form})", form=form)
    kinds = {_file_kind(c)[0] for c in files[:64]}
    if "index_file" in kinds or any(_is_index_name(c.name) for c in files):
        return Target(Kind.INDEX_DIR, p, index_dir=p, detail="a directory of index files")
    if not files:
        if (p / "index").is_dir():  # a store root copied without its commitlog/
            return Target(
                Kind.OTHER_DIR,
                p,
                detail=f"it holds an index/ folder but no commitlog/: pass {p / 'index'} "
                "to read its index files",
            )
        hint = _tiered_hint(p)
        if hint is not None:
            return Target(Kind.OTHER_DIR, p, detail=hint)
        detail = _FOLDERS_ONLY
    else:
        detail = _NO_INDEX_FILES
    instead = ""
    tiered = [c.name for c in files[:64] if _file_kind(c)[0] == Kind.TIERED]
    if tiered:
        # a broker names local files by number and segments by offset; these are copies
        instead = (
            f"it holds tiered IndexStoreFiles under names no broker gives them "
            f"({', '.join(tiered[:3])}{', ...' if len(tiered) > 3 else ''}): pass one file "
            "at a time"
        )
    return Target(Kind.OTHER_DIR, p, detail=detail, instead=instead)


#: where uploaded index segments sit below the POSIX backend's folders, from
#: ``tieredStoreFilePath`` (``<md5>_<cluster>/<broker>/...``) down to ``rmq_sys_INDEX/0``
_SEGMENTS_BELOW = (
    f"*/*/{INDEX_TOPIC}/0/INDEX",
    f"*/{INDEX_TOPIC}/0/INDEX",
    f"{INDEX_TOPIC}/0/INDEX",
    "0/INDEX",
    "INDEX",
)


def _tiered_hint(p: Path) -> str | None:
    """What to pass instead of a folder of the tiered store that holds no index file
    itself: the segment folders below it, or (an emptied ``tiered_index_file/``) where
    the files went."""
    found = sorted(
        {
            d
            for pattern in _SEGMENTS_BELOW
            for d in p.glob(pattern)
            if d.is_dir() and any(parse_segment_name(q.name) is not None for q in _visible(d))
        }
    )
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return (
            f"a folder of RocketMQ's tiered store: its uploaded index segments are in "
            f"{found[0]}{more}; pass that folder"
        )
    if p.name == LOCAL_DIR_NAME:
        return (
            f"an empty {LOCAL_DIR_NAME}/ folder: RocketMQ uploads every local index file "
            "at a clean shutdown; pass the segment folder under tieredStoreFilePath "
            f"(<md5>_<cluster>/<broker>/{INDEX_TOPIC}/0/INDEX)"
        )
    return None


_INSTEAD = {
    "dataset": "an exported Parquet dataset: query it with `rmqarrow sql`, `rmqarrow query "
    "--engine duckdb`, or turn it back into index files with `rmqarrow import`",
    "commitlog_dir": "a CommitLog directory, not index files: build an index from it with "
    "`rmqarrow build STORE --from-commitlog DIR`, or pass it as commitlog=DIR",
    "tiered": "a tiered IndexStoreFile (RocketMQ's tiered store), not a local index file",
    "tiered_dataset": "an exported Parquet dataset of tiered index files: query it with "
    "`rmqarrow query --engine duckdb`, or rebuild the files with "
    "`rmqarrow import`",
    "rocksdb": "a RocksDB message index (RocketMQ RIP-82), not IndexFiles: `rmqarrow info`, "
    "`query`, `check`, `export`, `verify` and `sql` read it",
    "rocksdb_dataset": "an exported Parquet dataset of a RocksDB message index: query it with "
    "`rmqarrow query --engine duckdb` or `rmqarrow sql`",
    "empty_dir": "an empty directory: no index files to read",
    "other_file": "not an index file",
    "other_dir": "not a store: no index files in it",
    "missing": "no such file or directory",
}


#: Each kind as a noun phrase ("an index directory"), for messages about a path.
KIND_NAMES = {
    "index_file": "an index file",
    "index_dir": "an index directory",
    "broker_root": "a broker store root",
    "commitlog_dir": "a CommitLog directory",
    "dataset": "an exported dataset",
    "tiered": "tiered index files",
    "tiered_dataset": "an exported dataset of tiered index files",
    "rocksdb": "a RocksDB message index",
    "rocksdb_dataset": "an exported dataset of a RocksDB message index",
    "empty_dir": "an empty directory",
    "other_file": "a file",
    "other_dir": "a directory",
    "missing": "missing",
}


def describe(t: Target) -> str:
    """One phrase naming what ``t`` is and what to do with it."""
    instead = instead_of(t)
    if instead:
        return f"not a store itself; {instead}"
    text = _INSTEAD.get(t.kind, t.detail)
    if t.kind in ("other_file", "other_dir") and t.detail:
        text = f"{text} ({t.detail})"
    return text


def require_index_store(target: str | os.PathLike[str], *, allow_file: bool = True) -> Target:
    """The index file or directory to read for ``target``, or an error naming what it is.

    A broker store root resolves to its ``index/`` directory, said as an info record of this
    module's logger.  A missing path raises :class:`StoreNotFoundError`, any other wrong
    kind :class:`UsageError`.
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
            raise UsageError(
                f"{t.path}: a broker store root whose index/ directory is empty: "
                "no index files to read"
            )
        _log.info("%s is a broker store root; reading its index files in %s", t.path, t.index_dir)
        return t
    if t.kind == "index_dir" or (t.kind == "index_file" and allow_file):
        return t
    if t.kind == "index_file":
        raise UsageError(f"{t.path}: one index file; this command takes a store directory")
    raise UsageError(f"{t.path}: {describe(t)}")


def require_commitlog(target: str | os.PathLike[str]) -> Path:
    """The CommitLog directory for ``target`` (a broker root resolves to its ``commitlog/``);
    an error when it holds no CommitLog file (20-digit names)."""
    t = detect(target)
    if t.kind == "missing":
        raise StoreNotFoundError(f"{t.path}: no such CommitLog directory")
    if t.kind == "broker_root" and t.commitlog_dir is not None:
        _log.info("%s is a broker store root; reading its CommitLog in %s", t.path, t.commitlog_dir)
        t = detect(t.commitlog_dir)
        if t.kind == "empty_dir":
            raise UsageError(
                f"{t.path}: the CommitLog directory holds no CommitLog files "
                "(20-digit names such as 00000000000000000000)"
            )
    if t.kind == "commitlog_dir":
        return t.path
    if t.kind == "empty_dir":
        raise UsageError(
            f"{t.path}: an empty directory, no CommitLog files (20-digit names "
            "such as 00000000000000000000)"
        )
    if t.kind in ("index_dir", "index_file"):
        raise UsageError(
            f"{t.path}: index files, not a CommitLog; pass the broker's store/commitlog directory"
        )
    raise UsageError(
        f"{t.path}: {describe(t)}; expected a CommitLog directory (files with "
        "20-digit names, the broker's store/commitlog)"
    )


def require_index_source(target: str | os.PathLike[str]) -> Target:
    """Native index files or an exported dataset of them: what the SQL engines read.

    A broker store root is accepted (read its :attr:`Target.index_path`); a dataset missing
    one of its tables, a missing path or anything else is refused in one line.
    """
    t = detect(target)
    if t.kind == "missing":
        raise StoreNotFoundError(f"{t.path}: no such store directory, index file or dataset")
    if t.kind == "dataset":
        present = [name for name in _DATASET_TABLES if (t.path / name).is_dir()]
        if len(present) != len(_DATASET_TABLES):
            missing = sorted(set(_DATASET_TABLES) - set(present))
            raise DatasetError(
                f"{t.path}: a dataset needs the directories files/, slots/ and entries/; "
                f"found {', '.join(present) or 'none'}, missing {', '.join(missing)}"
            )
        return t
    if t.kind in ("index_file", "index_dir") or (t.kind == "broker_root" and t.index_dir):
        return t
    raise DatasetError(
        f"{t.path}: neither a dataset (expected files/, slots/, entries/ directories) nor a "
        f"store (expected index files): {describe(t)}"
    )
