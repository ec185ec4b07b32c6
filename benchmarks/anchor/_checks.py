"""Proof that both sides did the same work: identical files, identical answers."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["compare_answers", "compare_files", "read_java_answers"]

_CHUNK = 1 << 24


def compare_files(a: Path, b: Path) -> dict[str, Any]:
    """Whether two files hold the same bytes; the first differing offset and a's sha256."""
    digest = hashlib.sha256()
    first_difference: int | None = None
    size_a, size_b = a.stat().st_size, b.stat().st_size
    with open(a, "rb") as fa, open(b, "rb") as fb:
        pos = 0
        while chunk := fa.read(_CHUNK):
            digest.update(chunk)
            other = fb.read(len(chunk))
            if first_difference is None and chunk != other:
                x = np.frombuffer(chunk, np.uint8)
                y = np.frombuffer(other.ljust(len(chunk), b"\0"), np.uint8)
                first_difference = pos + int(np.flatnonzero(x != y)[0])
            pos += len(chunk)
    if first_difference is None and size_a != size_b:
        first_difference = min(size_a, size_b)
    return {
        "identical": first_difference is None,
        "first_difference": first_difference,
        "sha256": digest.hexdigest(),
        "bytes": size_a,
    }


def read_java_answers(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The driver's answers: per-query counts and all offsets (format in the driver)."""
    raw = np.fromfile(path, dtype=np.uint8)
    q, total = (int(v) for v in raw[:16].view("<i8"))
    counts_end = 16 + 4 * q
    counts = raw[16:counts_end].view("<i4").astype(np.int64)
    start = 16 + (4 * q + 7) // 8 * 8
    offsets = raw[start : start + 8 * total].view("<i8")
    if offsets.size != total:
        raise ValueError(f"{path}: expected {total} offsets, found {offsets.size}")
    return counts, offsets


def compare_answers(
    java: tuple[np.ndarray, np.ndarray],
    table: pa.Table,
    lookups: np.ndarray,
    phy_offsets: np.ndarray,
) -> dict[str, Any]:
    """Both sides' answers query by query, and whether each query found its own key."""
    jcounts, joffsets = java
    q = lookups.size
    query = table.column("query").to_numpy()
    poffsets = table.column("phy_offset").to_numpy()
    pcounts = np.bincount(query, minlength=q) if query.size else np.zeros(q, np.int64)
    counts_equal = bool(np.array_equal(jcounts, pcounts))
    equal = counts_equal and bool(np.array_equal(joffsets, poffsets))
    first_bad: int | None = None
    if not equal:
        bad = np.flatnonzero(jcounts != pcounts) if not counts_equal else None
        if bad is not None and bad.size:
            first_bad = int(bad[0])
        else:  # same counts, some offset differs: name the query it belongs to
            where = int(np.flatnonzero(joffsets != poffsets)[0])
            first_bad = int(query[where])
    # The keys are distinct, so every query must find the offset its key was put with.
    own = np.zeros(q, dtype=bool)
    own[query[poffsets == phy_offsets[lookups][query]]] = True
    return {
        "equal": equal,
        "first_different_query": first_bad,
        "queries": int(q),
        "offsets": int(joffsets.size),
        "every_query_found_its_key": bool(own.all()),
    }
