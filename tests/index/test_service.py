"""IndexService: naming, rolling, buildIndex rules, queries, checkpoint, recovery."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from rmqarrow import IndexFile, IndexService, MessageRecord, Query, RmqArrowError, StoreCheckpoint
from rmqarrow.format.naming import file_name_for, list_index_files
from rmqarrow.format.records import index_keys

T0 = 1_700_000_000_000
UTC = dt.UTC


class Clock:
    def __init__(self, start: int = T0) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now


def service(tmp_path: Path, slots: int = 4, positions: int = 4, **kw: object) -> IndexService:
    return IndexService(tmp_path / "index", slots, positions, tz=UTC, clock=Clock(), **kw)  # type: ignore[arg-type]


def rec(
    offset: int,
    keys: str | None = None,
    uniq: str | None = None,
    ts: int = T0,
    topic: str = "T",
    flag: int = 0,
) -> MessageRecord:
    return MessageRecord(topic, keys, uniq, offset, ts, flag)


def test_file_names_follow_rocketmq_and_never_collide(tmp_path: Path) -> None:
    assert file_name_for(T0, UTC) == "20231114221320000"
    assert file_name_for(T0 + 123, dt.timezone(dt.timedelta(hours=8))) == "20231115061320123"
    with service(tmp_path, positions=2) as s:
        for i in range(3):  # one entry a file: three files, same clock reading
            s.build_index(rec(i, uniq=f"u{i}"))
        names = [f.name for f in s.files]
    assert names == ["20231114221320000", "20231114221320001", "20231114221320002"]


def test_index_keys_expansion() -> None:
    r = rec(0, keys="  a b  a ", uniq="U")
    assert index_keys(r) == ["T#U", "T#a", "T#b", "T#a"]
    assert index_keys(rec(0, keys=" ")) == []
    assert index_keys(rec(0, keys=None, uniq="")) == []


def test_build_index_rules(tmp_path: Path) -> None:
    with service(tmp_path, slots=8, positions=64) as s:
        s.build_index(rec(100, keys="k1 k2", uniq="U1"))
        s.build_index(rec(200, keys="k1", flag=0xC))  # rollback: skipped
        s.build_index(rec(50, keys="k1"))  # below the file end offset: skipped
        s.build_index(rec(300, keys="k1", flag=0x8))  # commit: indexed
        assert s.files[0].entry_count == 4
        assert s.query_offset("T", "k1", 10).phy_offsets == [300, 100]
        assert s.query_offset("T", "U1", 10).phy_offsets == [100]
        result = s.query_offset("T", "k2", 10)
        assert result.index_last_update_phy_offset == 300
        assert result.index_last_update_timestamp == T0


def test_rolling_seeds_the_new_file(tmp_path: Path) -> None:
    with service(tmp_path, positions=3) as s:
        s.build_index(rec(10, keys="a b c", ts=T0 + 5000))
        assert len(s.files) == 2
        second = s.files[1]
        assert second.begin_phy_offset == 10 and second.entry_count == 1
        # the first entry of a rolled file takes its diff against the previous end timestamp
        assert second.regions.entries["time_diff"][1] == 0


def test_query_caps_max_num_at_batch_size(tmp_path: Path) -> None:
    with service(tmp_path, slots=4, positions=64, max_msgs_num_batch=3) as s:
        for i in range(10):
            s.build_index(rec(i, keys="k"))
        assert s.query_offset("T", "k", 100).phy_offsets == [9, 8, 7]
        assert len(s.lookup(Query("T#k", 100))) == 10  # lookup has no batch cap


def test_newest_file_first_and_begin_stop(tmp_path: Path) -> None:
    with service(tmp_path, slots=2, positions=3) as s:
        for i, ts in enumerate([T0, T0 + 10_000, T0 + 20_000, T0 + 30_000]):
            s.build_index(rec(i, keys="k", ts=ts))
        assert len(s.files) == 2
        assert s.query_offset("T", "k", 10).phy_offsets == [3, 2, 1, 0]
        # the newest file begins before `begin`: older files are not searched
        assert s.query_offset("T", "k", 10, T0 + 15_000).phy_offsets == [3, 2]


def test_load_orders_names_like_java(tmp_path: Path) -> None:
    """Java string order of the names ``Long.parseLong`` accepts; RocketMQ's load skips the
    others (``NumberFormatException``), and so does rmqarrow (it names them)."""
    store = tmp_path / "index"
    store.mkdir()
    for name in ["b", "a", "Z", "10", "9", "+7", ".hidden"]:
        IndexFile.create(store / name, 2, 4).close()
    assert [p.name for p in list_index_files(store)] == ["+7", "10", "9"]
    with IndexService(store, 2, 4) as s:
        s.load()
        assert [f.name for f in s.files] == ["+7", "10", "9"]


def test_checkpoint_round_trip_keeps_other_bytes(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    path.write_bytes(bytes(40) + (bytes(range(256)) * 16)[40:])
    cp = StoreCheckpoint.read(path)
    cp.index_msg_timestamp = T0
    cp.write(path)
    raw = path.read_bytes()
    assert len(raw) == 4096 and raw[40:] == (bytes(range(256)) * 16)[40:]
    assert int.from_bytes(raw[16:24], "big") == T0
    assert StoreCheckpoint.read(path) == cp
    assert StoreCheckpoint.read(tmp_path / "missing") == StoreCheckpoint()


def test_flush_records_full_files_in_the_checkpoint(tmp_path: Path) -> None:
    cp = tmp_path / "checkpoint"
    with service(tmp_path, positions=3, checkpoint_path=cp) as s:
        s.build_index(rec(1, keys="a", ts=T0 + 1000))
        s.flush()
        assert StoreCheckpoint.read(cp).index_msg_timestamp == 0  # not full yet
        s.build_index(rec(2, keys="b", ts=T0 + 2000))
        s.build_index(rec(3, keys="c", ts=T0 + 3000))  # rolls: the full file is flushed
        assert StoreCheckpoint.read(cp).index_msg_timestamp == T0 + 2000


def build_crashed_store(tmp_path: Path) -> tuple[Path, Path]:
    cp = tmp_path / "checkpoint"
    with service(tmp_path, positions=4, checkpoint_path=cp) as s:
        for i in range(5):
            s.build_index(rec(i, keys=f"k{i}", ts=T0 + i * 1000))
    c = StoreCheckpoint.read(cp)
    c.index_msg_timestamp = T0 + 3000  # the newest file was written past this
    c.write(cp)
    return tmp_path / "index", cp


def test_abnormal_load_deletes_files_past_the_checkpoint(tmp_path: Path) -> None:
    store, cp = build_crashed_store(tmp_path)
    names = [p.name for p in list_index_files(store)]
    with IndexService(store, 4, 4, checkpoint_path=cp) as s:
        s.load(last_exit_ok=False)
        assert [f.name for f in s.files] == names[:1]
    assert [p.name for p in list_index_files(store)] == names[:1]


def test_salvage_keeps_valid_entries(tmp_path: Path) -> None:
    store, cp = build_crashed_store(tmp_path)
    c = StoreCheckpoint.read(cp)
    c.index_msg_timestamp = T0 + 3500
    c.write(cp)
    with IndexService(store, 4, 4, checkpoint_path=cp) as s:
        s.load(last_exit_ok=False, salvage=True)
        assert len(s.files) == 2
        assert s.files[1].entry_count == 1
        assert s.query_offset("T", "k3", 10).phy_offsets == [3]
        assert s.query_offset("T", "k4", 10).phy_offsets == []
    # the original is kept beside the store directory, never inside it (load() opens all)
    assert [p.name for p in store.iterdir() if p.name.startswith(".")] == []
    assert any((store.parent / f".{store.name}.before-salvage").iterdir())


def test_salvage_with_nothing_to_keep_keeps_the_original(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file none of whose entries is surely before the checkpoint leaves the store as
    RocketMQ removes it, but salvage never deletes data: the original is in the backup."""
    store, cp = build_crashed_store(tmp_path)
    c = StoreCheckpoint.read(cp)
    c.index_msg_timestamp = T0 + 2500  # before the newest file's first entry
    c.write(cp)
    names = [p.name for p in list_index_files(store)]
    before = (store / names[1]).read_bytes()
    with IndexService(store, 4, 4, checkpoint_path=cp) as s:
        s.load(last_exit_ok=False, salvage=True)
        assert [f.name for f in s.files] == names[:1]
    backup = store.parent / f".{store.name}.before-salvage" / names[1]
    assert backup.read_bytes() == before
    assert "kept in" in caplog.text and names[1] in caplog.text


def test_abnormal_load_needs_a_checkpoint(tmp_path: Path) -> None:
    with IndexService(tmp_path, 4, 4) as s, pytest.raises(RmqArrowError, match="checkpoint"):
        s.load(last_exit_ok=False)


def test_delete_expired_never_deletes_the_newest(tmp_path: Path) -> None:
    with service(tmp_path, positions=2) as s:
        for i in range(4):
            s.build_index(rec(i * 10, uniq=f"u{i}"))
        assert len(s.files) == 4
        deleted = s.delete_expired_files(25)
        assert len(deleted) == 3 and not any(p.exists() for p in deleted)
        assert len(s.files) == 1
        assert s.delete_expired_files(10**9) == []


def test_read_only_service_refuses_writes(tmp_path: Path) -> None:
    with service(tmp_path) as s:
        s.build_index(rec(1, keys="a"))
    with IndexService(tmp_path / "index", 4, 4, read_only=True) as s:
        s.load()
        with pytest.raises(RmqArrowError, match="read-only"):
            s.build_index(rec(2, keys="b"))
