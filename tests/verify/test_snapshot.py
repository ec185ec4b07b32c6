"""Engines answering as of one snapshot: each file's header pinned once.

A writer appends after the pin and the oldest file is deleted (a broker's expiry): the
native lookup over the pinned files and DuckDB given the same snapshot still give the
same answers, the pinned ones, and the deleted file is a note.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pytest

from rmqarrow.engines import answer_with_engine
from rmqarrow.errors import UsageError
from rmqarrow.format.layout import Geometry, GeometryHint
from rmqarrow.format.queries import Query
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.kernels.lookup import answers_from_table, query_offsets

SLOTS, INDEX = 100, 400
KEYS = 5


def _batch(a: int, b: int) -> pa.Table:
    return pa.table(
        {
            "topic": ["T"] * (b - a),
            "keys": [f"k{i % KEYS}" for i in range(a, b)],
            "uniq_key": [f"u{i}" for i in range(a, b)],
            "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, b)], pa.int64()),
            "store_timestamp": pa.array(
                [1_700_000_000_000 + 10 * i for i in range(a, b)], pa.int64()
            ),
            "sys_flag": pa.array([0] * (b - a), pa.int32()),
        }
    )


def test_duckdb_answers_as_of_the_pinned_headers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "index"
    writer = IndexService(store, SLOTS, INDEX, 1 << 20)
    writer.load()
    writer.build_index_batch(_batch(0, 1000))  # 3 files, the newest part full
    queries = [Query(f"T#k{k}", 1000) for k in range(KEYS)] + [Query("T#k1", 7, 0, 1 << 62)]
    reader, _ = open_healthy(store, GeometryHint(SLOTS, INDEX))
    with reader:
        files = list(reader.files)
        snapshot = {f.name: f.pin() for f in files}
        writer.build_index_batch(_batch(1000, 1100))  # after the pin: not in any answer
        oldest = files[0].path
        oldest.unlink()  # expired by the broker mid-run
        left = files[1:]
        table = query_offsets(
            left,
            [q.key for q in queries],
            [q.max_num for q in queries],
            [q.begin for q in queries],
            [q.end for q in queries],
        )
        native = answers_from_table(table, len(queries))
        with caplog.at_level(logging.INFO):
            got = answer_with_engine(
                "duckdb",
                store,
                queries,
                geometry=Geometry(SLOTS, INDEX),
                snapshot=snapshot,
            )
        live = answer_with_engine("duckdb", store, queries, geometry=GeometryHint(SLOTS, INDEX))
    writer.close()
    assert got == native
    assert max(o for a in got for o in a) < 1000 + 100 * 1000  # nothing written after the pin
    assert max(o for a in live for o in a) == 1000 + 100 * 1099  # read live, it sees them
    assert f"{oldest}: expired during the run (deleted), skipped" in caplog.text


def test_a_snapshot_is_refused_by_an_engine_that_cannot_pin(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not read a pinned snapshot"):
        answer_with_engine("spark", tmp_path, [Query("T#k", 1)], snapshot={})
