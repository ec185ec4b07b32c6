"""fsck of a store (rmqarrow.verify.fsck) and the per-file explanation of a lookup
(rmqarrow.verify.explain)."""

from __future__ import annotations

from pathlib import Path

from rmqarrow.format.layout import ENTRY_DTYPE, Geometry
from rmqarrow.format.queries import Query
from rmqarrow.index.service import IndexService, open_healthy
from rmqarrow.testing.stores import write_random_store
from rmqarrow.verify.explain import explain_query
from rmqarrow.verify.fsck import check_store

G = Geometry(16, 64)


def test_chain_damage_kinds(tmp_path: Path) -> None:
    paths = write_random_store(tmp_path / "s", G, [60, 60], seed=2)
    health, reports = check_store(tmp_path / "s")
    assert health.ok and all(r.chains_ok for r in reports.values())
    with open(paths[0], "r+b") as fh:
        fh.seek(G.entries_offset + 3 * ENTRY_DTYPE.itemsize + 16)
        fh.write((5000).to_bytes(4, "big"))  # prev_index out of range
        fh.seek(G.entries_offset + 4 * ENTRY_DTYPE.itemsize + 12)
        fh.write((-1).to_bytes(4, "big", signed=True))  # negative time diff
    health, reports = check_store(tmp_path / "s")
    r = reports[paths[0].name]
    assert r.out_of_range == 1 and r.negative_time_diffs == 1 and r.off_chain >= 1
    assert [f.status for f in health.files] == ["damaged chains", "ok"]


def test_explain_lines(tmp_path: Path) -> None:
    t0 = 1_700_000_000_000
    with IndexService(tmp_path / "s", 4, 16, clock=lambda: t0) as s:
        for i in range(30):
            f = s.last_file_for_write()
            assert f.put_key(
                "T#k" if i % 3 == 0 else f"T#o{i}", 100 * i, t0 + 1000 * i
            ) or s.new_file().put_key("T#k" if i % 3 == 0 else f"T#o{i}", 100 * i, t0 + 1000 * i)
        s.flush()
    service, _ = open_healthy(tmp_path / "s")
    with service:
        lines = explain_query(service.files, Query("T#k", 64))
        assert lines[0].startswith("'T#k': hash") and "offsets" in lines[0]
        assert len(lines) == 1 + len(service.files)
        late = explain_query(service.files, Query("T#k", 64, t0 + 29_500, t0 + 40_000))
        assert any("skipped: it holds" in line for line in late)
        capped = explain_query(service.files, Query("T#k", 1))
        assert any("max_num 1 reached" in line for line in capped)
        bare = explain_query(service.files, Query("k", 64))
        assert bare[-1].endswith("pass --topic")
