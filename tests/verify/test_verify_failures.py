"""verify fails, and says why, on a stale dataset, a set-semantics shortcut, a damaged chain."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from legacy_dataset import legacy_layout

from rmqarrow import Query, index_key_hash
from rmqarrow.cli import main
from rmqarrow.demo.run import find_semantics_case
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.layout import GeometryHint, map_regions
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.verify import EngineUnderTest, verify
from rmqarrow.verify.sampling import probe_key


def naive_engine(store: Path, hash_slot_num: int, index_num: int) -> EngineUnderTest:
    """The shortcut verify must catch: every entry with an equal hash and a time in range
    (newest file first, position descending, max_num), ignoring where the chain stops."""
    from rmqarrow.converters.arrow.tables import store_tables

    entries = store_tables(store, hash_slot_num, index_num).entries
    rows = sorted(
        entries.select(
            ["file_name", "position", "key_hash", "phy_offset", "store_timestamp"]
        ).to_pylist(),
        key=lambda r: (r["file_name"], r["position"]),
        reverse=True,
    )

    def answer(queries: list[Query]) -> list[list[int]]:
        out = []
        for q in queries:
            h = index_key_hash(q.key)
            hits = [
                r["phy_offset"]
                for r in rows
                if r["key_hash"] == h and q.begin <= r["store_timestamp"] <= q.end
            ]
            out.append(hits[: q.max_num])
        return out

    return EngineUnderTest("naive-set", answer, f"store {store}")


def test_set_semantics_shortcut_is_caught_and_explained(generated: Any) -> None:
    service, _ = open_healthy(
        generated.store, GeometryHint(generated.hash_slot_num, generated.index_num)
    )
    with service:
        case = find_semantics_case(service.files, generated.keys)
    assert case is not None, "the generated stream must hold an out-of-order case"
    naive = naive_engine(generated.store, generated.hash_slot_num, generated.index_num)
    golden_like = [case, Query(case.key, 64)]  # the second: no window, both agree
    report = verify(
        generated.store,
        engines=["native", naive, "duckdb"],
        queries=golden_like,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert not report.ok
    by_engine = {e.engine: e for e in report.engines}
    assert by_engine["duckdb"].mismatches == 0  # DuckDB reproduces the native chain cut
    assert by_engine["naive-set"].mismatches == 1
    m = report.mismatches[0]
    assert m.engine == "naive-set" and m.index == 0
    assert len(m.got) > len(m.native)
    assert any(
        r.startswith("out-of-order store times") and "past the cut" in r for r in m.reasons
    ), m.reasons
    # sampled queries over the whole store find such cases too
    sampled = verify(
        generated.store,
        engines=["native", naive],
        keys=generated.keys,
        sample=400,
        seed=1,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert sampled.mismatches
    assert all(
        any(r.startswith(("out-of-order store times", "file-stop rule")) for r in mm.reasons)
        for mm in sampled.mismatches
    ), [mm.reasons for mm in sampled.mismatches]


def test_stale_dataset_fails_with_reason(
    generated: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rmqarrow.converters.parquet.export import export_store

    store = tmp_path / "store"
    shutil.copytree(generated.store, store)
    ds = tmp_path / "ds"
    export_store(store, ds, hash_slot_num=generated.hash_slot_num, index_num=generated.index_num)
    # The broker keeps indexing after the export.
    late = pa.table(
        {
            "topic": ["orders"] * 300,
            "keys": [f"LATE-{i:04d}" for i in range(300)],
            "uniq_key": pa.nulls(300, pa.string()),
            "commit_log_offset": pa.array(np.arange(300) * 500 + 10**9, pa.int64()),
            "store_timestamp": pa.array(np.arange(300) * 1000 + 1_900_000_000_000, pa.int64()),
            "sys_flag": pa.array(np.zeros(300), pa.int32()),
        }
    )
    with IndexService(store, generated.hash_slot_num, generated.index_num) as service:
        service.load()
        service.build_index_batch(late)
        service.flush()
    queries = [Query(f"orders#LATE-{i:04d}", 4) for i in range(0, 300, 30)]
    report = verify(
        store,
        dataset=ds,
        engines=["native", "duckdb"],
        queries=queries,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert not report.ok
    assert report.dataset_check is not None and report.dataset_check.stale
    assert any("entries:" in p and "expected" in p for p in report.dataset_check.problems)
    assert report.engines[1].mismatches == len(queries)
    for m in report.mismatches:
        assert m.got == [] and len(m.native) == 1
        assert m.reasons[0].startswith("stale dataset: the store changed after the export")
    status = main(
        ["verify", str(store), "--dataset", str(ds), "--engines", "native,duckdb", "--sample", "50"]
    )
    out = capsys.readouterr().out
    assert status == 1
    assert "stale:" in out and "FAILED" in out


def _damage(store: Path, hash_slot_num: int, index_num: int) -> tuple[str, int, int]:
    """Cut one chain: the head entry of a slot with >= 3 entries gets prev_index 0.
    Returns (file name, slot, key hash of an entry left behind the cut)."""
    service, _ = open_healthy(store, GeometryHint(hash_slot_num, index_num))
    with service:
        f = service.files[-2]
        path, geometry, count = f.path, f.geometry, f.index_count
    m = map_regions(path, geometry, writable=True)
    try:
        e = m.entries[1:count]
        slots = np.fmod(e["key_hash"].astype(np.int64), hash_slot_num)
        sizes = np.bincount(slots, minlength=hash_slot_num)
        slot = int(np.argmax(sizes))
        positions = np.flatnonzero(slots == slot) + 1
        head = int(m.slots[slot])
        assert head == positions[-1]
        m.entries["prev_index"][head] = 0
        lost_hash = int(m.entries["key_hash"][positions[0]])
        m.mm.flush()
    finally:
        del e
        m.close()
    return path.name, slot, lost_hash


def test_damaged_chain_is_found_and_explained(generated: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(generated.store, store)
    name, slot, lost_hash = _damage(store, generated.hash_slot_num, generated.index_num)
    q = Query(probe_key(lost_hash), 1000, 0, JAVA_LONG_MAX)
    report = verify(
        store,
        engines=["native", "duckdb"],
        queries=[q],
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert not report.ok
    assert [d.file_name for d in report.chain_damage] == [name]
    assert report.chain_damage[0].bad_entries == 1
    assert report.mismatches, "DuckDB reads the slot's entries and finds what the walk lost"
    m = report.mismatches[0]
    assert set(m.native) < set(m.got)
    assert any(r.startswith(f"damaged chain in file {name} slot {slot}") for r in m.reasons)
    # sampled mode fails on the damage even when no sampled query hits that slot
    sampled = verify(
        store,
        engines=["native"],
        sample=20,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert not sampled.ok and sampled.chain_damage


def test_dataset_entries_compared_byte_for_byte(generated: Any, tmp_path: Path) -> None:
    """A dataset row that differs from its native entry is reported by file and position."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from rmqarrow.converters.parquet.export import export_store

    ds = tmp_path / "ds"
    # the older layout, whose manifest is then written as an export older than parts
    # lists wrote it (a changed part of Delta tables is caught by their record the same)
    g = generated
    export_store(g.store, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    legacy_layout(ds)
    part = sorted((ds / "entries").glob("*.parquet"))[0]
    table = pq.read_table(part)
    phy = pc.add(table.column("phy_offset"), 1)  # every offset of this file off by one
    pq.write_table(
        table.set_column(
            table.schema.get_field_index("phy_offset"), table.schema.field("phy_offset"), phy
        ),
        part,
    )
    report = verify(
        generated.store,
        dataset=ds,
        engines=["native"],
        sample=10,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.dataset_check is not None and not report.dataset_check.ok
    # the manifest's part list catches it first ...
    assert any(p.startswith("parts:") for p in report.dataset_check.problems)
    # ... and without one (a manifest written before parts were listed), the rows do
    import json

    manifest = json.loads((ds / "_rmqarrow.json").read_text())
    del manifest["parts"]
    (ds / "_rmqarrow.json").write_text(json.dumps(manifest))
    report = verify(
        generated.store,
        dataset=ds,
        engines=["native"],
        sample=10,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.dataset_check is not None and not report.dataset_check.ok
    assert any(
        "phy_offset is" in p and "in the native file" in p for p in report.dataset_check.problems
    ), report.dataset_check.problems


def test_engine_errors_and_unavailable_engines(generated: Any) -> None:
    from rmqarrow.errors import EngineUnavailableError

    def broken(queries: list[Query]) -> list[list[int]]:
        raise RuntimeError("engine crashed")

    def missing(queries: list[Query]) -> list[list[int]]:
        raise EngineUnavailableError("no Java here: set JAVA_HOME")

    def short(queries: list[Query]) -> list[list[int]]:
        return []

    engines = [
        "native",
        EngineUnderTest("broken", broken),
        EngineUnderTest("optional", missing),
        EngineUnderTest("short", short),
    ]
    report = verify(
        generated.store,
        engines=engines,
        sample=10,
        required=["native", "broken", "short"],
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    status = {e.engine: (e.status, e.error) for e in report.engines}
    assert status["broken"] == ("error", "RuntimeError: engine crashed")
    assert status["optional"] == ("skipped", "no Java here: set JAVA_HOME")
    assert status["short"] == ("error", "returned 0 answers for 10 queries")
    assert not report.ok
    ok = verify(
        generated.store,
        engines=["native", EngineUnderTest("optional", missing)],
        sample=10,
        required=["native"],
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert ok.ok  # an engine not required and unavailable does not fail the run
    required = verify(
        generated.store,
        engines=["native", EngineUnderTest("optional", missing)],
        sample=10,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert not required.ok


def test_file_stop_rule_is_explained(tmp_path: Path) -> None:
    """A newer file starting earlier than the older file's last entry hides that entry."""
    from rmqarrow import IndexFile

    store = tmp_path / "store"
    store.mkdir()
    with IndexFile.create(store / "00000", 4, 4) as a:
        assert a.put_key("t#x", 100, 100_000)
        assert a.put_key("t#y", 200, 200_000)
        assert a.put_key("t#K", 300, 300_000)
        assert not a.put_key("t#z", 400, 150_000)
    with IndexFile.create(store / "00001", 4, 4, end_phy_offset=300, end_timestamp=300_000) as b:
        assert b.put_key("t#z", 400, 150_000)  # stored out of order: before file 00000's end
    q = Query("t#K", 64, 250_000, JAVA_LONG_MAX)
    naive = naive_engine(store, 4, 4)
    report = verify(
        store, engines=["native", naive, "duckdb"], queries=[q], hash_slot_num=4, index_num=4
    )
    assert [e.mismatches for e in report.engines] == [0, 1, 0]
    m = report.mismatches[0]
    assert m.native == [] and m.got == [300]
    assert any(
        r.startswith("file-stop rule: the native walk ends after file 00001") and "[300]" in r
        for r in m.reasons
    ), m.reasons


def test_dataset_with_wrong_types_or_missing_rows(
    generated: Any, generated_dataset: Path, tmp_path: Path
) -> None:
    import pyarrow.parquet as pq

    ds = tmp_path / "ds"
    shutil.copytree(generated_dataset, ds)
    part = ds / "files" / "part-00000.parquet"
    files = pq.read_table(part)
    pq.write_table(files.slice(1), part)  # the oldest file's row is lost
    report = verify(
        generated.store,
        dataset=ds,
        engines=["native"],
        sample=5,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.dataset_check is not None
    assert any("has no files row" in p for p in report.dataset_check.problems)
    pq.write_table(
        files.set_column(
            1, "begin_timestamp", files.column("begin_timestamp").cast(pa.int32(), safe=False)
        ),
        part,
    )
    report = verify(
        generated.store,
        dataset=ds,
        engines=["native"],
        sample=5,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.dataset_check is not None and not report.ok
    assert any(p.startswith("files: columns") for p in report.dataset_check.problems)


def test_dataset_slot_heads_compared(
    generated: Any, generated_dataset: Path, tmp_path: Path
) -> None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ds = tmp_path / "ds"
    shutil.copytree(generated_dataset, ds)
    part = sorted((ds / "slots").glob("*.parquet"))[1]
    table = pq.read_table(part)
    heads = pc.subtract(table.column("head"), pa.scalar(1, pa.int32()))
    pq.write_table(table.set_column(2, table.schema.field("head"), heads), part)
    report = verify(
        generated.store,
        dataset=ds,
        engines=["native"],
        sample=5,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.dataset_check is not None and not report.ok
    assert any(
        p.startswith("slots:") and "head is" in p and "slots differ" in p
        for p in report.dataset_check.problems
    ), report.dataset_check.problems
