"""Reading never writes a byte of the broker's directory nor takes its lock, also while
another process holds the database open for writing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rocksdb_live import HOUR, T0, Writer, lock_holders, make_db, snapshot

from rmqarrow.errors import ReadOnlyIndexError
from rmqarrow.rocksdb import RocksDBIndex


@pytest.fixture
def live_db(tmp_path: Path) -> Iterator[tuple[Path, Writer]]:
    db = tmp_path / "store" / "rocksdbstore"
    make_db(db, 50)
    writer = Writer(db, 50)
    try:
        yield db, writer
    finally:
        writer.stop()


def test_reading_a_closed_database_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "db"
    make_db(db, 30)
    before = snapshot(db)
    with RocksDBIndex.open(db) as r:
        assert len(r.pairs()) == 30 * 2 + 2
        assert r.query_offset("T", "k1", 64, T0, T0 + HOUR) is not None
    assert snapshot(db) == before


def test_reading_while_a_writer_holds_it(live_db: tuple[Path, Writer]) -> None:
    db, writer = live_db
    writer.send("w 40")  # in the writer's WAL and memtable only
    before = snapshot(db)
    assert lock_holders(db) == {writer.proc.pid}
    with RocksDBIndex.open(db.parent) as r:  # a broker store root finds rocksdbstore/
        pairs = r.pairs()
        assert len(pairs) == 50 * 2 + 40 + 2  # the unflushed writes come from the WAL copy
        answer = r.query_offset("T", "k3", 64, T0, T0 + HOUR, "K")
        assert answer is not None and answer.index_last_update_phy_offset == 89 * 100
    assert snapshot(db) == before
    assert lock_holders(db) == {writer.proc.pid}
    writer.send("w 10")  # the writer goes on undisturbed
    writer.send("f")
    with RocksDBIndex.open(db) as r:
        assert len(r.pairs()) == 50 * 2 + 50 + 2


def test_open_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "db"
    make_db(db, 3)
    with RocksDBIndex.open(db) as r, pytest.raises(ReadOnlyIndexError):
        r.build_index("T", "k", None, "U1", 10_000, T0, 0, 10)
