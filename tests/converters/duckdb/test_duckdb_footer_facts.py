"""The per-file entry minima from the footers equal the SQL aggregate they replace."""

from __future__ import annotations

from pathlib import Path

import pytest
from rmqarrow.converters.duckdb import sql
from rmqarrow.converters.duckdb.footer_facts import entry_facts
from rmqarrow.converters.parquet.export import export_store

from rmqarrow.format.layout import Geometry
from rmqarrow.testing.stores import write_random_store

_SQL = (
    "SELECT newest_rank, min(store_timestamp), min(time_diff) FROM _rmq_entries "
    "GROUP BY newest_rank ORDER BY newest_rank"
)


@pytest.mark.parametrize(
    ("sizes", "footers"),
    # an empty newest file has a part of its own that names no owner: the generic path
    [([30, 12, 0], False), ([30, 0, 12], True), ([5], True), ([0], False)],
)
def test_footer_minima_equal_sql(tmp_path: Path, sizes: list[int], footers: bool) -> None:
    store = tmp_path / "store"
    write_random_store(store, Geometry(8, 64), sizes, seed=7)
    export_store(store, tmp_path / "ds", hash_slot_num=8, index_num=64)
    con = sql.connect(tmp_path / "ds")
    try:
        # the footer table, not the SQL view, when every entries part names its one file
        views = con.sql(
            "SELECT sql FROM duckdb_views() WHERE view_name = '_rmq_entry_facts'"
        ).fetchall()
        assert len(views) == 1
        assert ("arrow" in views[0][0]) == footers
        got = con.sql("SELECT * FROM _rmq_entry_facts ORDER BY newest_rank").fetchall()
        assert got == con.sql(_SQL).fetchall()
    finally:
        con.close()


def test_no_statistics_means_no_facts(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(
        pa.table({"store_timestamp": [1, 2], "time_diff": pa.array([0, 1], pa.int32())}),
        path,
        write_statistics=False,
    )
    assert entry_facts({0: [str(path)]}) is None
