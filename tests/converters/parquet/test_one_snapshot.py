"""A reader lists every table of a dataset by one snapshot: a run committed while it lists
them (an incremental run, a follow round) is not paired with the run before.

The run is put between the reader's first table and its second by wrapping the parts
listing the reader calls: the run itself is a real incremental export, and the reader a
real DuckDB connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from index_appends import INDEX, SLOTS, append_records
from rmqarrow.converters.duckdb import connect
from rmqarrow.converters.parquet import parts as parts_module
from rmqarrow.converters.parquet.incremental import sync_store
from rmqarrow.converters.parquet.manifest import read_manifest


@pytest.fixture
def dataset(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    store = tmp_path / "store" / "index"
    store.mkdir(parents=True)
    append_records(store, 0, 120)  # 240 entries: 3 files of 100, the newest growing
    ds = tmp_path / "ds"
    sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX)
    yield store, ds


def _run_during_listing(
    monkeypatch: pytest.MonkeyPatch, module: Any, store: Path, ds: Path
) -> Callable[[], int]:
    """``module``'s parts listing, which runs an incremental export (200 more entries:
    the newest file grows, two are born) once, right after its first table is listed;
    returns how many runs it made."""
    listed = module.table_parts
    runs = []

    def listing(*args: Any, **kwargs: Any) -> Any:
        out = listed(*args, **kwargs)
        if not runs:
            append_records(store, 120, 220)
            assert sync_store(store, ds, hash_slot_num=SLOTS, index_num=INDEX).changed
            runs.append(1)
        return out

    monkeypatch.setattr(module, "table_parts", listing)
    return lambda: len(runs)


def _counts(con: Any) -> tuple[int, int, int]:
    files = con.execute("SELECT count(*), sum(index_count - 1) FROM files").fetchone()
    entries = con.execute("SELECT count(*) FROM entries").fetchone()
    return int(files[0]), int(files[1]), int(entries[0])


def test_duckdb_views_are_of_one_run(
    dataset: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rmqarrow.converters.duckdb import sql

    store, ds = dataset
    runs = _run_during_listing(monkeypatch, sql, store, ds)
    con = connect(ds)
    try:
        assert runs() == 1  # the run committed while the views were made
        # every view is of the run before it: 3 files, 240 entries, as files says
        assert _counts(con) == (3, 240, 240)
    finally:
        con.close()
    monkeypatch.undo()
    con = connect(ds)
    try:
        assert _counts(con) == (5, 440, 440)  # the next reader reads the new run, whole
    finally:
        con.close()


def test_the_listing_is_really_between_runs(
    dataset: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without one snapshot, the same interleaving pairs two runs: the wrapper does put
    a commit between two tables' listings (what the tests above rely on)."""
    store, ds = dataset
    runs = _run_during_listing(monkeypatch, parts_module, store, ds)
    first = parts_module.table_parts(ds, "files")
    second = parts_module.table_parts(ds, "entries")
    assert runs() == 1
    assert first and second
    latest = {str(r["path"]) for r in read_manifest(ds)["parts"]}
    listed_second = {p.relative_to(ds.absolute()).as_posix() for p in second}
    assert listed_second <= latest  # read by the run after
