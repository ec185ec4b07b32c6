"""The ``rocketmq-index`` data source reads native files as the reference decoder does."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from golden_data import golden_set
from rmqarrow.converters.arrow.tables import store_tables
from rmqarrow.converters.schema import SCHEMAS
from rmqarrow.converters.spark.batches import plan_pieces
from rmqarrow.converters.spark.source import FORMAT, register

from rmqarrow.errors import GeometryError
from rmqarrow.format.layout import GeometryHint

pytestmark = pytest.mark.spark


def _sorted(table: pa.Table, keys: list[str]) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in keys])


@pytest.mark.parametrize(
    ("table", "keys"),
    [
        ("entries", ["file_name", "position"]),
        ("slots", ["file_name", "slot"]),
        ("files", ["file_name"]),
    ],
)
def test_tables_equal_reference_decoder(spark: Any, table: str, keys: list[str]) -> None:
    g = golden_set("rolling")
    register(spark)
    df = (
        spark.read.format(FORMAT)
        .option("table", table)
        .option("hashSlotNum", g.hash_slot_num)
        .option("indexNum", g.index_num)
        .option("pieceRows", 9)  # split every file into several partitions
        .load(str(g.store_dir))
    )
    assert df.columns == SCHEMAS[table].names
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        {"string": "string", "int32": "int", "int64": "bigint"}[str(f.type)] for f in SCHEMAS[table]
    ]
    expected = getattr(store_tables(g.store_dir, g.hash_slot_num, g.index_num), table)
    got = _sorted(df.toArrow(), keys).cast(SCHEMAS[table])
    assert got.equals(_sorted(expected, keys))
    if table == "entries":
        assert (
            df.rdd.getNumPartitions()
            == len(
                plan_pieces(
                    g.store_dir, geometry=GeometryHint(g.hash_slot_num, g.index_num), piece_rows=9
                )
            )
            > len(g.files)
        )


def test_pieces_cover_every_position_once() -> None:
    g = golden_set("rolling")
    pieces = plan_pieces(
        g.store_dir, geometry=GeometryHint(g.hash_slot_num, g.index_num), piece_rows=7
    )
    entries = store_tables(g.store_dir, g.hash_slot_num, g.index_num).entries
    for name in g.files:
        mine = sorted((p.start, p.stop) for p in pieces if p.path.endswith(name))
        covered = [i for a, b in mine for i in range(a, b)]
        count = sum(1 for n in entries.column("file_name").to_pylist() if n == name)
        assert covered == list(range(1, count + 1))


def test_wrong_geometry_is_a_clear_error() -> None:
    g = golden_set("rolling")
    with pytest.raises(GeometryError, match="hash-slot"):
        plan_pieces(g.store_dir)


def test_bad_options_and_schema_are_clear_errors(spark: Any) -> None:
    g = golden_set("basic")
    register(spark)
    with pytest.raises(Exception, match="option table must be one of files, slots, entries"):
        spark.read.format(FORMAT).option("table", "bogus").load(str(g.store_dir)).collect()
    with pytest.raises(Exception, match="has the fixed schema"):
        spark.read.format(FORMAT).schema("a INT").load(str(g.store_dir)).collect()
