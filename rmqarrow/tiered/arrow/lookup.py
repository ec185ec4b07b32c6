"""The tiered lookup as relations and one SQL text, shared by the DuckDB and Spark engines.

An engine registers the relations :func:`lookup_relations` builds and runs
:data:`TIERED_LOOKUP_SQL`; :func:`assemble` turns its rows into answers, merged across files
by :func:`rmqarrow.tiered.merge_answers` (rule 28) exactly as the native store does.

Relations (Arrow tables):

``t_queries``  qid, hash_code (rules 1-2, rmqarrow's hash kernel), max_count, q_begin,
               q_end, lim (rows kept per file: ``max(maxCount, 0) + 1`` on the local form,
               ``max(maxCount, 0)`` on the compacted form and in exact mode), exact (0/1)
``t_pairs``    qid, file_name, file_rank: which file answers which query (one file: every
               query; a folder: files whose begin timestamp lies in ``[begin, end]``, newest
               first, an uploaded segment replacing the local file of its timestamp)
``t_files``    the ``tiered_files`` rows plus ``items_base`` (``28 + 8*S``)
``t_reads``    file_name, slot, head, rpos, rlen: what reading 8 bytes at the slot
               position gives, for every stored slot and for slots -3..-1, whose position
               (4, 12, 20) lies inside the header (rule 3)
``t_chains``   file_name, slot, step, ipos: the walk of every local slot along
               ``next`` (rule 14's 512 steps, or the whole chain in exact mode; rule 17's
               cycle stop), from :func:`rmqarrow.tiered.slot_chains`
``t_items``    the ``tiered_items`` rows (``position`` as ``ipos``, ``offset`` as ``ioff``,
               ``size`` as ``isize``: SQL keywords avoided)

The SQL only joins and ranks: local answers are the chain's matching items by step,
compacted answers the matching items whose bytes lie in the slot's (capped) byte range,
in item order.  It reports, per compacted (query, file), ``error`` where RocketMQ's read
fails and ``unaligned`` where a slot range does not start on the item grid (only a
``MIN_VALUE`` key in a header slot or a damaged file does that): the engines then raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqarrow.errors import CorruptIndexError, TieredReadError
from rmqarrow.tiered import (
    IndexItem,
    TieredAnswer,
    TieredQuery,
    key_hashes,
    merge_answers,
    slot_chains,
    walk_chain,
)
from rmqarrow.tiered.arrow.tables import TieredTables

__all__ = ["TIERED_LOOKUP_SQL", "LookupInput", "assemble", "lookup_relations"]

_MAX_STEPS = 512
_COMPACT_CAP = 28 * 1024


@dataclass(frozen=True)
class LookupInput:
    """The relations to register, by name, and what :func:`assemble` needs."""

    relations: dict[str, pa.Table]
    queries: list[TieredQuery]
    pairs: list[list[tuple[int, str]]]  # per query: (file_rank, file_name), newest first
    store: bool


def _hi(v: int) -> int:
    return int(np.int64(v) >> np.int64(32)) if v >= 0 else (v >> 32)


def _lo(v: int) -> int:
    x = v & 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _header_reads(f: dict[str, object]) -> list[tuple[int, int, int]]:
    """(slot, int32 at the slot position, int32 after it) for slots -3, -2, -1."""
    begin, end = _int(f["begin_timestamp"]), _int(f["end_timestamp"])
    return [
        (-3, _hi(begin), _lo(begin)),
        (-2, _hi(end), _lo(end)),
        (-1, _int(f["hash_slot_count"]), _int(f["item_count"])),
    ]


def _int(value: object) -> int:
    """A files-row value the schema makes an integer."""
    assert isinstance(value, int), value
    return value


def _select(rows: list[dict[str, object]], q: TieredQuery) -> list[tuple[int, str]]:
    """Rule 28 over the files rows (a segment replaces the local file of its timestamp)."""
    if q.begin > q.end:
        return []
    table: dict[int, dict[str, object]] = {}
    for r in rows:  # rows: local files then segments, as a store loads them
        table[int(r["query_begin_timestamp"])] = r  # type: ignore[call-overload]
    keys = sorted((k for k in table if q.begin <= k <= q.end), reverse=True)
    return [(rank, str(table[k]["file_name"])) for rank, k in enumerate(keys)]


def lookup_relations(
    tables: TieredTables, queries: Sequence[Sequence[object]], *, exact: bool, store: bool
) -> LookupInput:
    """Everything the SQL reads, for ``queries`` over ``tables`` (a folder when ``store``)."""
    qs = [TieredQuery(*q) for q in queries]  # type: ignore[arg-type]
    rows = tables.file_rows()
    if store:
        rows = [r for r in rows if r["form"] == "unsealed"] + [
            r for r in rows if r["form"] == "compacted"
        ]
        pairs = [_select(rows, q) for q in qs]
    else:
        pairs = [[(0, str(rows[0]["file_name"]))] for _ in qs] if rows else [[] for _ in qs]
    hashes = key_hashes([q.topic for q in qs], [q.key for q in qs])
    forms = {str(r["file_name"]): r["form"] for r in rows}
    max_counts = np.array([q.max_count for q in qs], np.int64)
    base_lim = np.maximum(max_counts, 0)
    t_queries = pa.table(
        {
            "qid": pa.array(np.arange(len(qs)), pa.int64()),
            "hash_code": pa.array(hashes, pa.int64()),
            "q_begin": pa.array([q.begin for q in qs], pa.int64()),
            "q_end": pa.array([q.end for q in qs], pa.int64()),
            "lim_local": pa.array(base_lim + (0 if exact else 1), pa.int64()),
            "lim_compacted": pa.array(base_lim, pa.int64()),
            "exact": pa.array(np.full(len(qs), int(exact)), pa.int64()),
        }
    )
    pq_id, pf, pr = [], [], []
    for i, ps in enumerate(pairs):
        for rank, name in ps:
            pq_id.append(i)
            pf.append(name)
            pr.append(rank)
    t_pairs = pa.table(
        {
            "qid": pa.array(pq_id, pa.int64()),
            "file_name": pa.array(pf, pa.string()),
            "file_rank": pa.array(pr, pa.int64()),
        }
    )
    s_col = tables.files.column("hash_slot_num").to_numpy(zero_copy_only=False).astype(np.int64)
    t_files = tables.files.append_column("items_base", pa.array(28 + 8 * s_col, pa.int64()))
    # slot reads: stored slots plus the header slots
    reads = tables.slots.select(["file_name", "slot", "head", "position", "length"])
    reads = reads.rename_columns(["file_name", "slot", "head", "rpos", "rlen"])
    extra: dict[str, list[object]] = {
        "file_name": [],
        "slot": [],
        "head": [],
        "rpos": [],
        "rlen": [],
    }
    for r in rows:
        for slot, first, second in _header_reads(r):
            extra["file_name"].append(r["file_name"])
            extra["slot"].append(slot)
            local = r["form"] == "unsealed"
            extra["head"].append(first if local else None)
            extra["rpos"].append(None if local else first)
            extra["rlen"].append(None if local else second)
    reads = pa.concat_tables([reads, pa.table(extra, schema=reads.schema)])
    t_chains = _chains(tables, rows, hashes, pairs, forms, exact)
    return LookupInput(
        {
            "t_queries": t_queries,
            "t_pairs": t_pairs,
            "t_files": t_files,
            "t_reads": reads,
            "t_chains": t_chains,
            "t_items": _items(tables.items),
        },
        qs,
        [[(rank, name) for rank, name in ps] for ps in pairs],
        store,
    )


def _items(items: pa.Table) -> pa.Table:
    """The items with SQL-safe names (``offset`` and ``position`` are keywords)."""
    keep = [
        "file_name",
        "position",
        "hash_code",
        "topic_id",
        "queue_id",
        "offset",
        "size",
        "time_diff",
        "next_index",
        "store_time",
    ]
    return items.select(keep).rename_columns(
        [
            "file_name",
            "ipos",
            "hash_code",
            "topic_id",
            "queue_id",
            "ioff",
            "isize",
            "time_diff",
            "next_index",
            "store_time",
        ]
    )


def _chains(
    tables: TieredTables,
    rows: list[dict[str, object]],
    hashes: np.ndarray,
    pairs: list[list[tuple[int, str]]],
    forms: dict[str, object],
    exact: bool,
) -> pa.Table:
    out_f: list[np.ndarray] = []
    out_s: list[np.ndarray] = []
    out_t: list[np.ndarray] = []
    out_p: list[np.ndarray] = []
    for r in rows:
        if r["form"] != "unsealed":
            continue
        name = str(r["file_name"])
        s = int(r["hash_slot_num"])  # type: ignore[call-overload]
        c = int(r["item_count"])  # type: ignore[call-overload]
        cap = c + 1 if exact else _MAX_STEPS
        mine_s = tables.slots.filter(pc.equal(tables.slots.column("file_name"), name))
        heads = np.zeros(s, np.int64)
        heads[mine_s.column("slot").to_numpy()] = mine_s.column("head").to_numpy(
            zero_copy_only=False
        )
        mine_i = tables.items.filter(pc.equal(tables.items.column("file_name"), name))
        nexts = np.zeros(c + 1, np.int64)
        pos = mine_i.column("position").to_numpy().astype(np.int64)
        inside = pos <= c
        nexts[pos[inside]] = mine_i.column("next_index").to_numpy(zero_copy_only=False)[inside]
        asked = np.array(
            [
                int(h) % s if h >= 0 else -((-int(h)) % s)
                for h, ps in zip(hashes.tolist(), pairs, strict=True)
                if any(n == name for _, n in ps)
            ],
            np.int64,
        )
        slot, step, item = slot_chains(heads, nexts, c, cap, asked[asked >= 0])
        for hs, first, _second in _header_reads(r):
            if np.any(asked == hs):
                walk = walk_chain(first, nexts, c, cap)
                slot = np.concatenate([slot, np.full(len(walk), hs, np.int64)])
                step = np.concatenate([step, np.arange(1, len(walk) + 1, dtype=np.int64)])
                item = np.concatenate([item, np.asarray(walk, np.int64)])
        out_f.append(np.full(len(slot), name, object))
        out_s.append(slot)
        out_t.append(step)
        out_p.append(item)
    if not out_f:
        return pa.table(
            {
                "file_name": pa.array([], pa.string()),
                "slot": pa.array([], pa.int32()),
                "step": pa.array([], pa.int64()),
                "ipos": pa.array([], pa.int32()),
            }
        )
    return pa.table(
        {
            "file_name": pa.array(np.concatenate(out_f), pa.string()),
            "slot": pa.array(np.concatenate(out_s).astype(np.int32)),
            "step": pa.array(np.concatenate(out_t), pa.int64()),
            "ipos": pa.array(np.concatenate(out_p).astype(np.int32)),
        }
    )


#: The lookup; reads only the relations above.  Standard SQL both DuckDB and Spark run.
TIERED_LOOKUP_SQL = """
WITH pairs AS (
  SELECT p.qid, p.file_rank, p.file_name, f.form, f.file_size, f.items_base,
         q.hash_code AS qh, q.q_begin, q.q_end, q.lim_local, q.lim_compacted, q.exact,
         CAST(q.hash_code % f.hash_slot_num AS INT) AS qslot
  FROM t_pairs p JOIN t_queries q ON q.qid = p.qid JOIN t_files f ON f.file_name = p.file_name
),
local_hits AS (
  SELECT pr.qid, pr.file_rank, c.step AS ord, pr.lim_local AS lim, i.hash_code, i.topic_id,
         i.queue_id, i.ioff, i.isize, i.time_diff, i.next_index
  FROM pairs pr
  JOIN t_chains c ON c.file_name = pr.file_name AND c.slot = pr.qslot
  JOIN t_items i ON i.file_name = c.file_name AND i.ipos = c.ipos
  WHERE pr.form = 'unsealed' AND i.hash_code = pr.qh
    AND i.store_time >= pr.q_begin AND i.store_time <= pr.q_end
),
comp_reads AS (
  SELECT pr.*, COALESCE(r.rpos, 0) AS spos,
         CASE WHEN pr.exact = 1 THEN COALESCE(r.rlen, 0)
              ELSE LEAST(COALESCE(r.rlen, 0), 28672) END AS slen
  FROM pairs pr LEFT JOIN t_reads r ON r.file_name = pr.file_name AND r.slot = pr.qslot
  WHERE pr.form = 'compacted'
),
comp_status AS (
  SELECT c.*,
    CASE WHEN c.file_size <= 28 THEN 'none'
         WHEN 28 + 8 * c.qslot < 0 OR 28 + 8 * c.qslot >= c.file_size
           THEN CASE WHEN c.exact = 1 THEN 'none' ELSE 'error' END
         WHEN c.spos <= 0 OR c.slen <= 0 THEN 'none'
         WHEN c.spos >= c.file_size THEN CASE WHEN c.exact = 1 THEN 'none' ELSE 'error' END
         WHEN LEAST(CAST(c.slen AS BIGINT), c.file_size - c.spos) % 28 <> 0 THEN 'none'
         WHEN c.spos < c.items_base OR (c.spos - c.items_base) % 28 <> 0 THEN 'unaligned'
         ELSE 'read' END AS status,
    LEAST(CAST(c.slen AS BIGINT), c.file_size - c.spos) AS rlen
  FROM comp_reads c
),
comp_hits AS (
  SELECT s.qid, s.file_rank, CAST(i.ipos AS BIGINT) AS ord, s.lim_compacted AS lim,
         i.hash_code, i.topic_id, i.queue_id, i.ioff, i.isize, i.time_diff,
         CAST(0 AS INT) AS next_index
  FROM comp_status s
  JOIN t_items i ON i.file_name = s.file_name
   AND s.items_base + 28 * CAST(i.ipos AS BIGINT) >= s.spos
   AND s.items_base + 28 * CAST(i.ipos AS BIGINT) < s.spos + s.rlen
  WHERE s.status = 'read' AND i.hash_code = s.qh
    AND i.store_time >= s.q_begin AND i.store_time <= s.q_end
),
hits AS (
  SELECT * FROM local_hits UNION ALL SELECT * FROM comp_hits
),
ranked AS (
  SELECT h.*, ROW_NUMBER() OVER (PARTITION BY h.qid, h.file_rank ORDER BY h.ord) AS rn
  FROM hits h
)
SELECT 'item' AS kind, qid, file_rank, rn, hash_code, topic_id, queue_id, ioff, isize,
       time_diff, next_index
FROM ranked WHERE rn <= lim
UNION ALL
SELECT status AS kind, qid, file_rank, CAST(0 AS BIGINT) AS rn, CAST(0 AS INT) AS hash_code,
       CAST(0 AS INT) AS topic_id, CAST(0 AS INT) AS queue_id, CAST(0 AS BIGINT) AS ioff,
       CAST(0 AS INT) AS isize, CAST(0 AS INT) AS time_diff, CAST(0 AS INT) AS next_index
FROM comp_status WHERE status IN ('error', 'unaligned')
"""


def assemble(inp: LookupInput, rows: pa.Table) -> list[TieredAnswer]:
    """Answers from the SQL's rows: per file in step/item order, merged across files."""
    per: dict[tuple[int, int], list[tuple[int, IndexItem]]] = {}
    status: dict[tuple[int, int], str] = {}
    for r in rows.to_pylist():
        key = (int(r["qid"]), int(r["file_rank"]))
        if r["kind"] == "item":
            item = IndexItem(
                r["hash_code"],
                r["topic_id"],
                r["queue_id"],
                r["ioff"],
                r["isize"],
                r["time_diff"],
                r["next_index"],
            )
            per.setdefault(key, []).append((int(r["rn"]), item))
        else:
            status[key] = str(r["kind"])
    out: list[TieredAnswer] = []
    for qid, (q, ps) in enumerate(zip(inp.queries, inp.pairs, strict=True)):
        answers: list[list[IndexItem] | Exception] = []
        for rank, name in ps:
            st = status.get((qid, rank))
            if st == "unaligned":
                raise CorruptIndexError(
                    f"{name}: query {qid} reads a compacted slot range that does not start on "
                    "the item grid (an Integer.MIN_VALUE key in a header slot, or a damaged "
                    "file); only the native engine reproduces such reads"
                )
            if st == "error":
                answers.append(
                    TieredReadError(
                        f"{name}: the slot read of query {qid} falls outside the segment "
                        "(RocketMQ's query fails with TieredStoreException here)"
                    )
                )
                continue
            answers.append([it for _, it in sorted(per.get((qid, rank), []), key=lambda t: t[0])])
        if not inp.store:
            one = answers[0] if answers else []
            assert isinstance(one, list | TieredReadError)
            out.append(one)
            continue
        try:
            out.append(merge_answers(answers, q.max_count))
        except TieredReadError as exc:
            out.append(exc)
    return out
