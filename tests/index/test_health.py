"""Per-file store health and the geometry fitted from healthy files (rmqarrow.index.health)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqarrow.errors import CorruptIndexError
from rmqarrow.format.layout import Geometry, GeometryHint
from rmqarrow.index.health import fit_geometry, healthy_index_files, store_health
from rmqarrow.index.service import open_healthy
from rmqarrow.testing.stores import write_random_store

G = Geometry(16, 64)


def store(tmp_path: Path) -> list[Path]:
    return write_random_store(tmp_path / "s", G, [60, 60, 60, 30], seed=3)


def test_healthy_store(tmp_path: Path) -> None:
    store(tmp_path)
    h = store_health(tmp_path / "s")
    assert h.ok and h.geometry == G and len(h.files) == 4


def test_truncated_newest_is_left_out_and_geometry_from_the_rest(tmp_path: Path) -> None:
    paths = store(tmp_path)
    with open(paths[-1], "r+b") as fh:
        fh.truncate(Geometry(2, 8).file_size)  # a size that fits the 1:4 ratio by itself
    h = store_health(tmp_path / "s")
    assert h.geometry == G
    assert [f.status for f in h.files] == ["ok", "ok", "ok", "truncated"]
    geometry, healthy, damaged = healthy_index_files(tmp_path / "s")
    assert geometry == G and healthy == paths[:-1] and damaged[0].path == paths[-1]
    service, _ = open_healthy(tmp_path / "s")
    with service:
        assert [f.path for f in service.files] == paths[:-1]
        assert [f.path for f in service.skipped] == [paths[-1]]
    with pytest.raises(CorruptIndexError, match="strict=True"):
        open_healthy(tmp_path / "s", strict=True)


def test_same_odd_size_everywhere_is_wrong_geometry(tmp_path: Path) -> None:
    paths = write_random_store(tmp_path / "s", Geometry(10, 30), [20, 20], seed=1)
    h = store_health(tmp_path / "s")
    assert {f.status for f in h.files} == {"wrong geometry"}
    h = store_health(tmp_path / "s", GeometryHint(10, 30))
    assert h.ok and [f.path for f in h.files] == paths


def test_bad_header(tmp_path: Path) -> None:
    paths = store(tmp_path)
    with open(paths[1], "r+b") as fh:
        fh.seek(32)
        fh.write((1000).to_bytes(4, "big"))  # hashSlotCount beyond the slots
    h = store_health(tmp_path / "s")
    assert [f.status for f in h.files] == ["ok", "bad header", "ok", "ok"]


def test_fit_geometry_votes_and_explicit_counts() -> None:
    big, small = Geometry(100, 400).file_size, Geometry(10, 40).file_size
    assert fit_geometry([big, big, small])[0] == Geometry(100, 400)
    assert fit_geometry([small, big])[0] == Geometry(100, 400)  # tie: the newest
    assert fit_geometry([big], GeometryHint(7, 9))[0] == Geometry(7, 9)


def test_random_store_names_stay_17_digits_and_in_time_order(tmp_path: Path) -> None:
    # from the 1,000th file on the names once grew an 18th digit and sorted mid-store
    paths = write_random_store(tmp_path / "s", Geometry(2, 8), [2] * 1003)
    names = [p.name for p in paths]
    assert all(len(n) == 17 and n.isdigit() for n in names)
    assert names == sorted(names)
    h = store_health(tmp_path / "s")
    assert h.ok, [f.describe() for f in h.damaged][:3]


def _misnamed_store(tmp_path: Path) -> tuple[Path, Path]:
    """Three files; the newest renamed to 18 digits, which sorts it before the middle one."""
    import rmqarrow

    d = tmp_path / "s"
    d.mkdir()
    for i, name in enumerate(["20231114221320000", "20231114221320001", "20231114221320002"]):
        with rmqarrow.IndexFile.create(d / name, 16, 64) as f:
            for j in range(5):
                f.put_key(f"T#k{i}", i * 1000 + j, 1_700_000_000_000 + i * 3_600_000 + j * 1000)
    moved = d / "202311142213200001"
    (d / "20231114221320002").rename(moved)
    return d, moved


def test_a_name_sorting_out_of_time_order_is_flagged_when_answers_change(tmp_path: Path) -> None:
    import rmqarrow

    d, moved = _misnamed_store(tmp_path)
    newest_begin = 1_700_000_000_000 + 2 * 3_600_000
    with rmqarrow.open(d) as s:
        # RocketMQ's walk stops at the file sorting last by name, which begins earlier
        assert s.query("T", "k2", begin=newest_begin) == []
        assert s.query("T", "k2") == [2004, 2003, 2002, 2001, 2000]
        result = s.check()
    assert not result.ok and not result.health.damaged
    [flagged] = result.health.misordered
    assert flagged.path == moved and flagged.status == "out of name order"
    assert "18 characters, not the 17 digits" in flagged.detail
    assert "20231114221320001" in flagged.detail
    assert not flagged.skipped_by_readers
    assert flagged in result.health.healthy  # read, as RocketMQ reads it


def test_check_names_a_file_out_of_name_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli_run import run

    d, moved = _misnamed_store(tmp_path)
    status, out, _err = run(capsys, "check", str(d))
    assert status == 1
    assert f"misordered: {moved}: out of name order: its name has 18 characters" in out


def test_a_store_in_time_order_is_not_flagged(tmp_path: Path) -> None:
    d, moved = _misnamed_store(tmp_path)
    moved.rename(d / "20231114221320002")
    assert store_health(d).ok
