"""DuckDB and Spark answer every golden query as the native tiered lookup does."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from tiered_golden_data import TieredSet

from rmqarrow.errors import TieredReadError
from rmqarrow.tiered import TieredAnswer, answer_queries, segment_file_name
from rmqarrow.tiered.duckdb import answer_queries as duck_answers
from rmqarrow.tiered.parquet.export import export_tiered


def qtuples(ts: TieredSet) -> list[tuple[str, str, int, int, int]]:
    return [(q.topic, q.key, q.max_count, q.begin, q.end) for q in ts.queries]


def same(a: list[TieredAnswer], b: list[TieredAnswer]) -> list[int]:
    """Indices where the answers differ (a failure must meet a failure)."""
    return [
        i
        for i, (x, y) in enumerate(zip(a, b, strict=True))
        if (isinstance(x, TieredReadError) != isinstance(y, TieredReadError))
        or (not isinstance(x, TieredReadError) and x != y)
    ]


def golden(ts: TieredSet, form: str) -> list[Any]:
    out: list[Any] = []
    for a in ts.expected[form]:
        out.append("error" if a.outcome != "ok" else a.items)
    return out


def as_golden(answers: list[TieredAnswer]) -> list[Any]:
    return [
        "error"
        if isinstance(a, TieredReadError)
        else [
            (i.hash_code, i.topic_id, i.queue_id, i.offset, i.size, i.time_diff, i.next_index)
            for i in a
        ]
        for a in answers
    ]


@pytest.mark.parametrize("form", ["unsealed", "compacted"])
def test_duckdb_equals_golden_and_native(tiered_set: TieredSet, form: str) -> None:
    path = tiered_set.dir / f"{form}.bin"
    qs = qtuples(tiered_set)
    got = duck_answers(path, qs)
    assert as_golden(got) == golden(tiered_set, form)
    for exact in (False, True):
        assert (
            same(duck_answers(path, qs, exact=exact), answer_queries(path, qs, exact=exact)) == []
        )


def test_duckdb_store_and_dataset(tiered_set: TieredSet, tmp_path: Path) -> None:
    """A folder: local file plus an uploaded segment of an older file, and its dataset."""
    root = tmp_path / "store"
    local = root / "tiered_index_file"
    local.mkdir(parents=True)
    shutil.copyfile(tiered_set.dir / "unsealed.bin", local / str(tiered_set.file_timestamp))
    # the segment of the same file, its begin timestamp moved 1 s earlier: two files
    data = bytearray((tiered_set.dir / "compacted.bin").read_bytes())
    struct.pack_into(">q", data, 4, tiered_set.file_timestamp - 1000)
    (root / segment_file_name(0)).write_bytes(bytes(data))
    qs = qtuples(tiered_set)
    native = answer_queries(root, qs)
    assert same(duck_answers(root, qs), native) == []
    export_tiered(root, tmp_path / "ds")
    assert same(duck_answers(tmp_path / "ds", qs), native) == []
    exact = answer_queries(root, qs, exact=True)
    assert same(duck_answers(tmp_path / "ds", qs, exact=True), exact) == []


def test_duckdb_on_damaged_chains(tmp_path: Path) -> None:
    """Cycles and forward pointers: the engine's chains stop as the native walk does."""
    import random

    ts = TieredSet("tiered_collisions")
    path = tmp_path / str(ts.file_timestamp)
    data = bytearray((ts.dir / "unsealed.bin").read_bytes())
    rng = random.Random(3)
    base = 28 + 8 * ts.hash_slot_num
    for _ in range(30):
        k = rng.randrange(2, 1288)
        struct.pack_into(">i", data, base + 32 * k + 28, rng.randrange(1, 1289))
    path.write_bytes(bytes(data))
    qs = qtuples(ts)
    for exact in (False, True):
        assert (
            same(duck_answers(path, qs, exact=exact), answer_queries(path, qs, exact=exact)) == []
        )


@pytest.mark.spark
def test_spark_equals_native_both_forms(spark: Any, tmp_path: Path) -> None:
    """One shared session; the collisions set (both caps bind) in both forms, and a folder."""
    from rmqarrow.tiered.spark import answer_queries as spark_answers

    ts = TieredSet("tiered_collisions")
    qs = qtuples(ts)
    for form in ("unsealed", "compacted"):
        got = spark_answers(ts.dir / f"{form}.bin", qs)
        assert as_golden(got) == golden(ts, form)
    root = tmp_path / "store"
    (root / "tiered_index_file").mkdir(parents=True)
    shutil.copyfile(ts.dir / "unsealed.bin", root / "tiered_index_file" / str(ts.file_timestamp))
    assert same(spark_answers(root, qs, exact=True), answer_queries(root, qs, exact=True)) == []
