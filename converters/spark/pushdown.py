"""What the ``rocketmq_index`` data source can skip: pushed filters as a small value.

Spark >= 4.1 hands a Python data source the filters of a query
(``DataSourceReader.pushFilters``).  :func:`from_filters` turns the ones this format can
use into a :class:`Pushdown` (picklable, no pyspark needed to apply it):

* ``key_hash = v`` / ``IN`` and ``slot = v`` / ``IN``: only the chains of those slots are
  read in each file (slot head, then ``prev_index`` links: a handful of entries, not a
  scan of 20 M positions);
* ``file_name`` (``=``, ``IN``, ranges): files are skipped before any task runs;
* ``position`` ranges: only that range of each file is read;
* ``store_timestamp`` ranges: entries outside are dropped where they are decoded.

Every filter is still handed back to Spark, which evaluates it again on the (small)
result: pushdown only ever removes rows the filter would remove, so answers are the same
with it and without it.  A chain that is not strictly decreasing (a damaged file) makes
that slot fall back to a scan of the file's entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["Pushdown", "chain_positions", "from_filters"]

_INT_COLUMNS = ("key_hash", "slot", "position", "store_timestamp")


@dataclass(frozen=True)
class Pushdown:
    """Conjunction of simple predicates; ``None`` means unconstrained."""

    key_hashes: frozenset[int] | None = None
    slots: frozenset[int] | None = None
    file_names: frozenset[str] | None = None
    name_min: str | None = None
    name_max: str | None = None
    pos_min: int | None = None
    pos_max: int | None = None
    ts_min: int | None = None
    ts_max: int | None = None

    @property
    def empty(self) -> bool:
        """True when nothing is constrained (a plain scan)."""
        return self == Pushdown()

    def chain_slots(self, hash_slot_num: int) -> list[int] | None:
        """The slots whose chains hold every wanted entry, or None (read all positions)."""
        wanted: set[int] | None = None
        if self.key_hashes is not None:
            wanted = {int(np.fmod(np.int32(h), np.int32(hash_slot_num))) for h in self.key_hashes}
        if self.slots is not None:
            wanted = set(self.slots) if wanted is None else wanted & set(self.slots)
        if wanted is None:
            return None
        if any(s < 0 for s in wanted):
            return None  # only a damaged key hash gives one: on no chain, scan (masks apply)
        # a slot past this file's slots holds none of its entries (files of one store may
        # differ in geometry: the slots wanted in a bigger file are no reason to scan this one)
        return sorted(s for s in wanted if s < hash_slot_num)

    def keeps_file(self, name: str) -> bool:
        if self.file_names is not None and name not in self.file_names:
            return False
        if self.name_min is not None and name < self.name_min:
            return False
        return not (self.name_max is not None and name > self.name_max)

    def mask(self, cols: dict[str, np.ndarray]) -> np.ndarray | None:
        """Rows of decoded entry columns that may pass the filters (None: all)."""
        keep: np.ndarray | None = None

        def both(m: np.ndarray) -> None:
            nonlocal keep
            keep = m if keep is None else keep & m

        if self.key_hashes is not None:
            both(np.isin(cols["key_hash"], np.fromiter(self.key_hashes, np.int64)))
        if self.slots is not None:
            both(np.isin(cols["slot"], np.fromiter(self.slots, np.int64)))
        if self.ts_min is not None:
            both(cols["store_timestamp"] >= self.ts_min)
        if self.ts_max is not None:
            both(cols["store_timestamp"] <= self.ts_max)
        return keep


def chain_positions(
    slots: np.ndarray, entries: np.ndarray, count: int, slot: int
) -> np.ndarray | None:
    """Positions on ``slot``'s chain, ascending; None when the chain is not well formed.

    A well-formed chain starts at the slot head (0 for an empty slot, else
    ``0 < head < count``) and follows ``prev_index`` to 0 through strictly decreasing
    positions.
    """
    pos = int(slots[slot])
    out: list[int] = []
    limit = count
    while pos != 0:
        if pos < 0 or pos >= limit:
            return None
        out.append(pos)
        limit = pos
        pos = int(entries[pos]["prev_index"])
    out.reverse()
    return np.asarray(out, dtype=np.int64)


def _ints(value: Any) -> list[int] | None:
    values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return [int(v) for v in values]


def from_filters(filters: Iterable[Any]) -> Pushdown:
    """The :class:`Pushdown` of Spark filters (``pyspark.sql.datasource`` classes).

    Unknown filters, columns or value types are ignored (Spark evaluates them anyway).
    """
    p = Pushdown()
    for f in filters:
        kind = type(f).__name__
        attr: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
        if len(attr) != 1:
            continue
        col = attr[0]
        value = getattr(f, "value", None)
        if col == "file_name":
            p = _name_filter(p, kind, value)
            continue
        if col not in _INT_COLUMNS:
            continue
        ints = _ints(value)
        if ints is None:
            continue
        if kind in ("EqualTo", "In", "EqualNullSafe"):
            if col in ("key_hash", "slot"):
                vals = frozenset(ints)
                if col == "key_hash":
                    keys = vals if p.key_hashes is None else p.key_hashes & vals
                    p = replace(p, key_hashes=keys)
                else:
                    slots = vals if p.slots is None else p.slots & vals
                    p = replace(p, slots=slots)
            elif len(ints) >= 1:
                p = _range(p, col, min(ints), max(ints))
        elif kind in ("GreaterThan", "GreaterThanOrEqual") and len(ints) == 1:
            p = _range(p, col, ints[0] + (kind == "GreaterThan"), None)
        elif kind in ("LessThan", "LessThanOrEqual") and len(ints) == 1:
            p = _range(p, col, None, ints[0] - (kind == "LessThan"))
    return p


def _range(p: Pushdown, col: str, lo: int | None, hi: int | None) -> Pushdown:
    def tighten(old_lo: int | None, old_hi: int | None) -> tuple[int | None, int | None]:
        new_lo = lo if old_lo is None else (old_lo if lo is None else max(lo, old_lo))
        new_hi = hi if old_hi is None else (old_hi if hi is None else min(hi, old_hi))
        return new_lo, new_hi

    if col == "position":
        pos_min, pos_max = tighten(p.pos_min, p.pos_max)
        return replace(p, pos_min=pos_min, pos_max=pos_max)
    if col == "store_timestamp":
        ts_min, ts_max = tighten(p.ts_min, p.ts_max)
        return replace(p, ts_min=ts_min, ts_max=ts_max)
    return p  # key_hash / slot ranges: not used


def _name_filter(p: Pushdown, kind: str, value: Any) -> Pushdown:
    if kind in ("EqualTo", "In", "EqualNullSafe"):
        names = list(value) if isinstance(value, (list, tuple)) else [value]
        if not all(isinstance(n, str) for n in names):
            return p
        new = frozenset(names)
        return replace(p, file_names=new if p.file_names is None else p.file_names & new)
    if not isinstance(value, str):
        return p
    # string comparisons: Spark compares UTF-8 bytes; names are ASCII digits
    if kind == "GreaterThanOrEqual" or kind == "GreaterThan":
        return replace(p, name_min=value if p.name_min is None else max(value, p.name_min))
    if kind == "LessThanOrEqual" or kind == "LessThan":
        return replace(p, name_max=value if p.name_max is None else min(value, p.name_max))
    return p
