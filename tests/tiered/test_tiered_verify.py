"""verify on tiered files: agreement on a sound dataset, a mismatch on an edited one."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tiered_golden_data import TieredSet

from rmqarrow.tiered.parquet.export import export_tiered
from rmqarrow.tiered.verify import format_tiered_report, verify_tiered

COLL = TieredSet("tiered_collisions")


def test_verify_golden_queries_and_an_edited_dataset(tmp_path: Path) -> None:
    qs = [(q.topic, q.key, q.max_count, q.begin, q.end) for q in COLL.queries]
    f = COLL.dir / "unsealed.bin"
    export_tiered(f, tmp_path / "ds")
    report = verify_tiered(f, engines=("native", "duckdb"), queries=qs, dataset=tmp_path / "ds")
    assert report.ok and report.engines[1].status == "ok"
    assert report.engines[1].offsets_compared > 1000
    assert report.form_differences is not None and len(report.form_differences) == 68
    # edit one item's offset in the dataset: the engine now disagrees, and says where
    part = tmp_path / "ds" / "tiered_items" / "part-00000.parquet"
    table = pq.read_table(part)
    offsets = table.column("offset")
    edited = pc.if_else(
        pc.equal(table.column("position"), 1288), pa.scalar(-1, pa.int64()), offsets
    )
    pq.write_table(
        table.set_column(
            table.schema.get_field_index("offset"), table.schema.field("offset"), edited
        ),
        part,
    )
    report = verify_tiered(f, engines=("native", "duckdb"), queries=qs, dataset=tmp_path / "ds")
    assert not report.ok and report.mismatches
    out = io.StringIO()
    format_tiered_report(report, out)
    text = out.getvalue()
    assert "MISMATCH" in text and "FAILED" in text
    assert report.to_dict()["mismatches"][0]["engine"] == "duckdb"


def test_verify_sampled_compacted(tmp_path: Path) -> None:
    report = verify_tiered(
        COLL.dir / "compacted.bin", engines=("native", "duckdb"), sample=40, exact=True
    )
    assert report.ok and report.form_differences is None and len(report.queries) == 40
