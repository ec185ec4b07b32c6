"""Tiered index benchmarks: bulk queries and compaction, vectorized vs per-item Python.

A local tiered file (``S`` = items / 10 slots, ~10 items a slot, keys of 4 topics) is
built with ``put_key`` (cached in ``workdir``): 100,000 items by default, 1,000,000 with
``--full``.  Rows (``vs_baseline`` = speed over the baseline row of the same benchmark,
measured in the same run; the note holds ``/proc/loadavg`` at the time):

- ``tiered query``: (after one untimed call that compiles the hash kernel) ``query`` in a
  Python loop (baseline) vs ``query_many`` (one numpy
  pass per walk step across all queries) vs the DuckDB engine, for Q queries (half present
  keys, half absent; RocketMQ's rules);
- ``tiered compaction order``: the items' output order, by the slot-by-slot chain walk
  (baseline: what compaction did before, still used for damaged files) vs the health check
  plus pointer jumping; and the whole ``compaction_bytes`` for scale.

Run alone: ``python benchmarks/bench_tiered.py [--full] [--workdir DIR]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from _report import print_rows, row, set_ratios, timed

from rmqarrow.tiered import TieredIndexFile


def _load() -> str:
    try:
        return "loadavg " + Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()
    except OSError:
        return "loadavg n/a"


def _file(workdir: Path, items: int) -> tuple[Path, int, int]:
    s, n = max(items // 10, 1), items + 2
    path = workdir / f"tiered-{items}" / "1700000000000"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name("building")
        tmp.unlink(missing_ok=True)
        with TieredIndexFile.create(tmp, 1_700_000_000_000, s, n) as f:
            for i in range(items):
                f.put_key(
                    f"Topic{i % 4}", i % 4, i % 8, [f"key-{i}"], i * 100, 100, 1_700_000_000_000 + i
                )
        tmp.rename(path)
    return path, s, n


def run(full: bool, workdir: Path) -> list[dict[str, Any]]:
    from rmqarrow.tiered import slot_chains
    from rmqarrow.tiered._chains import is_healthy
    from rmqarrow.tiered._compaction import _chain_order
    from rmqarrow.tiered.duckdb import answer_queries as duck

    items = 1_000_000 if full else 100_000
    path, s, n = _file(workdir, items)
    rng = np.random.default_rng(1)
    nq = 20_000 if full else 5_000
    picks = rng.integers(0, items, nq)
    qs = [
        (f"Topic{i % 4}", f"key-{i}" if j % 2 == 0 else f"absent-{i}", 16, 0, 2**63 - 1)
        for j, i in enumerate(picks.tolist())
    ]
    rows: list[dict[str, Any]] = []
    note = f"{items:,} items, S={s:,}; {_load()}"
    with TieredIndexFile.open(path, s, n) as f:
        f.query_many(qs[:10])  # the first call compiles the hash kernel (numba): not timed
        t_loop, a = timed(lambda: [f.query(*q) for q in qs])
        t_bulk, b = timed(lambda: f.query_many(qs))
        assert a == b
        rows.append(row("tiered query", "query() loop", nq, t_loop, f"baseline; {note}"))
        rows.append(row("tiered query", "query_many (vectorized)", nq, t_bulk, note))
        t_duck, c = timed(lambda: duck(path, qs, hash_slot_num=s, index_num=n))
        assert c == a
        rows.append(row("tiered query", "duckdb engine (incl. load)", nq, t_duck, note))

        raw = path.read_bytes()
        slots = np.frombuffer(raw, ">i4", s * 2, 28)[::2]
        nexts = np.frombuffer(raw, ">i4", n * 8, 28 + 8 * s)[7::8]
        heads = np.maximum(slots, 0).astype(np.int64).tolist()
        c = f.item_count
        t_walk, _ = timed(lambda: _chain_order(heads, nexts, c, n, path))
        h64 = np.asarray(heads, np.int64)
        n64 = nexts[: c + 1].astype(np.int64)
        t_vec, _ = timed(
            lambda: is_healthy(h64, n64, c) and slot_chains(h64, n64, c, c + 1, healthy=True)
        )
        t_all, _ = timed(f.compaction_bytes)
        rows.append(
            row("tiered compaction order", "slot-by-slot walk", items, t_walk, f"baseline; {note}")
        )
        rows.append(row("tiered compaction order", "is_healthy + slot_chains", items, t_vec, note))
        rows.append(
            row(
                "tiered compaction order",
                "whole compaction_bytes",
                items,
                t_all,
                f"ordering plus copying the items; {note}",
            )
        )
    return set_ratios(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.gettempdir()) / "rmqarrow-bench"
    workdir.mkdir(parents=True, exist_ok=True)
    print_rows(run(args.full, workdir))


if __name__ == "__main__":
    main()
