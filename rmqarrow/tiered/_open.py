"""Opening whatever tiered path a user names, and comparing a file's two forms (rule 29).

:func:`open_tiered` is what the command line and the converters call: a file of either
form or a folder, geometry found as :mod:`rmqarrow.tiered._geometry` says.
:func:`form_differences` answers queries on a local file and on its compacted form (built
in memory) and lists where RocketMQ's answers change when the file is uploaded.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rmqarrow.errors import StoreNotFoundError, TieredReadError, UsageError
from rmqarrow.format.detect import detect
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.tiered.layout.binary import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    HEADER_SIZE,
    SLOT_SIZE,
    compacted_slot_num,
)
from rmqarrow.tiered.layout.naming import LOCAL_DIR_NAME, parse_segment_name

from ._compacted import CompactedIndexFile
from ._geometry import local_geometry
from ._store import TieredIndexStore
from ._types import IndexItem, TieredQuery, as_tiered_queries
from ._unsealed import TieredIndexFile

__all__ = [
    "FormDifference",
    "TieredAnswer",
    "answer_queries",
    "folder_geometry",
    "form_differences",
    "open_file",
    "open_tiered",
    "tiered_file_paths",
]

AnyTiered = TieredIndexFile | CompactedIndexFile | TieredIndexStore


def _compacted_s(path: Path) -> int | None:
    with open(path, "rb") as f:
        data = f.read(HEADER_SIZE + SLOT_SIZE)
    return compacted_slot_num(data, path.stat().st_size)


def folder_geometry(path: Path, geometry: GeometryHint) -> tuple[int, int, str | None]:
    """``(S, N, note)`` for a folder: from its first local file, else its first segment."""
    hash_slot_num, index_num = geometry.hash_slot_num, geometry.index_num
    local = path / LOCAL_DIR_NAME if (path / LOCAL_DIR_NAME).is_dir() else path
    names = sorted(local.iterdir()) if local.is_dir() else []
    for q in names:
        if q.is_file() and q.name.isascii() and q.name.isdigit() and detect(q).form == "unsealed":
            return local_geometry(q, geometry)
    for q in sorted(path.iterdir()):
        if parse_segment_name(q.name) is not None and q.is_file():
            s = _compacted_s(q)
            if s is not None:
                if hash_slot_num is not None and hash_slot_num != s:
                    raise UsageError(
                        f"{q}: a compacted file of S={s} slots, but "
                        f"hash_slot_num={hash_slot_num} was given"
                    )
                return s, index_num or DEFAULT_INDEX_NUM, None
    return hash_slot_num or DEFAULT_HASH_SLOT_NUM, index_num or DEFAULT_INDEX_NUM, None


def tiered_file_paths(folder: str | os.PathLike[str]) -> list[Path]:
    """Every tiered file of a tiered folder (:func:`rmqarrow.format.detect.detect`): the
    local files (oldest first), then the segments (by base offset), whether or not a
    segment replaces a local file in queries (rule 27)."""
    p = Path(folder)
    local = p / LOCAL_DIR_NAME if (p / LOCAL_DIR_NAME).is_dir() else p
    out = sorted(
        (
            q
            for q in local.iterdir()
            if q.is_file() and q.name.isascii() and q.name.isdigit() and int(q.name) < 1 << 63
        ),
        key=lambda q: int(q.name),
    )
    segs = sorted(
        (base, q)
        for q in p.iterdir()
        if (base := parse_segment_name(q.name)) is not None and q.is_file()
    )
    return out + [q for _, q in segs]


def open_file(
    path: Path, hash_slot_num: int, index_num: int
) -> TieredIndexFile | CompactedIndexFile:
    """One file of a folder, read-only, in the form its header says."""
    if detect(path).form == "unsealed":
        return TieredIndexFile.open(path, hash_slot_num, index_num)
    return CompactedIndexFile.open(path, hash_slot_num)


def open_tiered(
    path: str | os.PathLike[str], geometry: GeometryHint = GeometryHint.NONE
) -> tuple[AnyTiered, str | None]:
    """``path`` opened read-only as the tiered thing it is, and a note on its geometry
    (what ``geometry`` does not give is found by the tiered rules).

    Raises :class:`UsageError` when ``path`` is not tiered-index data (or the geometry
    cannot be told) and :class:`StoreNotFoundError` when it does not exist.
    """
    p = Path(path)
    if not p.exists():
        raise StoreNotFoundError(f"{p}: no such file or directory")
    kind = detect(p).form
    if kind == "unsealed":
        s, n, note = local_geometry(p, geometry)
        return TieredIndexFile.open(p, s, n), note
    if kind == "compacted":
        slots = _compacted_s(p)
        assert slots is not None
        if geometry.hash_slot_num is not None and geometry.hash_slot_num != slots:
            raise UsageError(
                f"{p}: a compacted file of S={slots} slots (its slot table says "
                f"so), but hash_slot_num={geometry.hash_slot_num} was given"
            )
        return CompactedIndexFile.open(p, slots), None
    if kind in ("local-dir", "segment-dir"):
        s, n, note = folder_geometry(p, geometry)
        return TieredIndexStore.open_folder(p, s, n), note
    raise UsageError(
        f"{p}: not a RocketMQ tiered index file or folder (no BEGIN/END magic at offset 0, "
        "no tiered_index_file/ or segment files)"
    )


@dataclass(frozen=True)
class FormDifference:
    """One query whose answer changes when the local file is uploaded (compacted)."""

    index: int
    query: TieredQuery
    local: list[IndexItem]
    compacted: list[IndexItem] | TieredReadError

    def reason(self) -> str:
        """A short guess at which rule made the difference."""
        if isinstance(self.compacted, TieredReadError):
            return "the compacted slot read fails (Integer.MIN_VALUE hash)"
        q = self.query
        if len(self.local) == max(q.max_count, 0) + 1 and len(self.compacted) <= q.max_count:
            return "local form returns maxCount + 1 items"
        if len(self.compacted) > len(self.local):
            return "512-step walk cap on the local form"
        return "1,024-item slot cap on the compacted form"


def form_differences(
    f: TieredIndexFile, queries: Iterable[Sequence[object]]
) -> list[FormDifference]:
    """Queries whose RocketMQ answer on ``f`` differs from the answer after upload.

    Items are compared without ``next_index`` (always 0 on the compacted form).
    """
    qs = as_tiered_queries(queries)
    local = f.query_many(qs)
    with f.compacted() as c:
        comp = c.query_many(qs, errors="return")

    def strip(items: list[IndexItem]) -> list[tuple[int, ...]]:
        return [(i.hash_code, i.topic_id, i.queue_id, i.offset, i.size, i.time_diff) for i in items]

    out = []
    for i, (q, a, b) in enumerate(zip(qs, local, comp, strict=True)):
        if isinstance(b, TieredReadError) or strip(a) != strip(b):
            out.append(FormDifference(i, q, a, b))
    return out


TieredAnswer = list[IndexItem] | TieredReadError
"""One query's answer: items, or the read failure where RocketMQ's query fails."""


def answer_queries(
    target: str | os.PathLike[str],
    queries: Iterable[Sequence[object]],
    *,
    exact: bool = False,
    geometry: Geometry | GeometryHint | None = None,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
) -> list[TieredAnswer]:
    """The native tiered engine: every query on a file (its form's rules) or a folder
    (IndexStoreService's selection and merge, rule 28).  The reference of every engine.
    ``geometry`` or ``hash_slot_num``/``index_num`` (not both forms) give what is known of
    ``S`` and ``N``; the rest is found by the tiered rules."""
    qs = as_tiered_queries(queries)
    opened, _note = open_tiered(target, geometry_hint(geometry, hash_slot_num, index_num))
    with opened:
        if isinstance(opened, TieredIndexFile):
            return list(opened.query_many(qs, exact=exact))
        if isinstance(opened, CompactedIndexFile):
            return opened.query_many(qs, exact=exact, errors="return")
        out: list[TieredAnswer] = []
        for a in opened.query_many(qs, exact=exact):
            if isinstance(a, Exception) and not isinstance(a, TieredReadError):
                raise a
            out.append(a)
        return out
