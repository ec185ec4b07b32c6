"""Fixtures for the DuckDB tests: Parquet datasets written from stores, and a reference walk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from converters.tables import IndexTables, store_tables
from rmqarrow.naming import java_name_order
from rmqarrow.queries import Query

DatasetMaker = Callable[..., Path]


def write_dataset(tables: IndexTables, out: Path, parts: int = 2) -> Path:
    """A dataset in the exporter's layout (files/, slots/, entries/), several files a table."""
    for name in ("files", "slots", "entries"):
        table: pa.Table = getattr(tables, name)
        directory = out / name
        directory.mkdir(parents=True)
        step = max(1, -(-table.num_rows // parts))
        for i, start in enumerate(range(0, max(table.num_rows, 1), step)):
            pq.write_table(table.slice(start, step), directory / f"part-{i:03d}.parquet")
    return out


@pytest.fixture(params=["export", "mixed"])
def make_dataset(request: pytest.FixtureRequest, tmp_path: Path) -> DatasetMaker:
    """``make_dataset(store_dir, hash_slot_num, index_num)`` -> a dataset directory.

    ``export``: written by :func:`converters.export.export_store` (one Parquet file per
    index file: DuckDB reads file ranks as constants); ``mixed``: parts that each hold
    rows of several index files (the generic path, joining names to ranks).
    """
    counter = iter(range(1_000_000))

    def make(
        store_dir: Path, hash_slot_num: int | None = None, index_num: int | None = None
    ) -> Path:
        out = tmp_path / f"dataset{next(counter)}"
        if request.param == "export":
            from converters.export import export_store

            export_store(store_dir, out, hash_slot_num=hash_slot_num, index_num=index_num)
            return out
        return write_dataset(store_tables(store_dir, hash_slot_num, index_num), out)

    return make


def reference_walk(tables: IndexTables, query: Query, key_hash: int) -> list[int]:
    """The native lookup, written out literally over the decoded tables (following prev)."""
    files = sorted(tables.files.to_pylist(), key=lambda f: java_name_order(f["file_name"]))
    slots = {(r["file_name"], r["slot"]): r["head"] for r in tables.slots.to_pylist()}
    entries = {(r["file_name"], r["position"]): r for r in tables.entries.to_pylist()}
    out: list[int] = []
    begin, end, max_num = query.begin, query.end, query.max_num
    for f in reversed(files):
        name, count = f["file_name"], f["index_count"]
        fb, fe = f["begin_timestamp"], f["end_timestamp"]
        matched = (begin < fb and end > fe) or fb <= begin <= fe or fb <= end <= fe
        head = slots.get((name, key_hash % f["hash_slot_num"]), 0)
        if matched and 0 < head <= count and count > 1:
            pos, seen = head, set()
            while len(out) < max_num and pos not in seen:
                seen.add(pos)
                e = entries.get((name, pos))
                if e is None:  # only in damaged files; not used by these tests
                    break
                if e["time_diff"] < 0:
                    break
                t = e["store_timestamp"]
                if e["key_hash"] == key_hash and begin <= t <= end:
                    out.append(e["phy_offset"])
                prev = e["prev_index"]
                if prev <= 0 or prev > count or prev == pos or t < begin:
                    break
                pos = prev
        if fb < begin or len(out) >= max_num:
            break
    return out


Walk = Callable[[IndexTables, Query, int], list[int]]


@pytest.fixture
def walk() -> Walk:
    """:func:`reference_walk`, as a fixture (test modules cannot import this conftest)."""
    return reference_walk
