"""The Python API on a store that changes under an open :class:`rmqarrow.store.Store`.

``query`` racing ``close`` in another thread answers whole or raises the closed-store
error, never an empty answer; a file truncated (or expired) under an open store is left
out with the warning (or note) the command line prints, not answered from as nothing.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import pytest

import rmqarrow
from rmqarrow.errors import ClosedIndexError

SLOTS, INDEX = 64, 200
WANT = [1000 + i for i in range(49, -1, -1)]


def _store(d: Path, files: int = 1) -> Path:
    d.mkdir()
    for n in range(files):
        with rmqarrow.IndexFile.create(d / f"2023111422132000{n}", SLOTS, INDEX) as f:
            for i in range(50):
                f.put_key("T#k", 1000 + i + n * 1000, 1_700_000_000_000 + n * 100_000 + i)
    return d


def test_query_racing_close_answers_whole_or_raises(tmp_path: Path) -> None:
    d = _store(tmp_path / "s")
    outcomes: list[object] = []
    for _trial in range(60):
        s = rmqarrow.open(d, hash_slot_num=SLOTS, index_num=INDEX)
        assert s.query("T", "k", max_num=100) == WANT
        started = threading.Event()

        def ask(store: rmqarrow.store.Store = s, go: threading.Event = started) -> None:
            go.set()
            for _ in range(200):
                try:
                    outcomes.append(store.query("T", "k", max_num=100))
                except ClosedIndexError as exc:
                    outcomes.append(exc)
                    return

        t = threading.Thread(target=ask)
        t.start()
        started.wait()
        s.close()
        t.join()
    answers = [o for o in outcomes if isinstance(o, list)]
    assert answers and all(a == WANT for a in answers)
    closed = [o for o in outcomes if isinstance(o, ClosedIndexError)]
    assert closed and all("closed" in str(e) for e in closed)


def test_lookups_in_threads_run_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first lookup waits inside the kernel for the second to finish: were lookups
    # serialised, the second could not start until the first gave up waiting
    from rmqarrow.kernels import lookup

    real = lookup.answer_queries
    second_done = threading.Event()
    finished: list[str] = []

    def first_waits(*args: object, **kwargs: object) -> list[list[int]]:
        if threading.current_thread().name == "first":
            second_done.wait(timeout=20)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lookup, "answer_queries", first_waits)
    with rmqarrow.open(_store(tmp_path / "s"), hash_slot_num=SLOTS, index_num=INDEX) as s:

        def ask(name: str) -> None:
            assert s.query("T", "k", max_num=100) == WANT
            finished.append(name)
            if name == "second":
                second_done.set()

        threads = [threading.Thread(target=ask, args=(n,), name=n) for n in ("first", "second")]
        threads[0].start()
        threads[1].start()
        for t in threads:
            t.join()
    assert finished == ["second", "first"]


def test_a_file_cut_short_then_expired_before_its_scan_is_left_out_as_expired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from rmqarrow.store import _index

    d = _store(tmp_path / "s", files=2)
    newest = d / "20231114221320001"
    real_scan = _index.file_health

    def broker_expires_it_first(path: Path, *args: object) -> object:
        path.unlink()  # the broker's expiry, between the size check and the scan
        return real_scan(path, *args)  # type: ignore[arg-type]

    with rmqarrow.open(d, hash_slot_num=SLOTS, index_num=INDEX) as s:
        assert s.query("T", "k", max_num=100)[:1] == [2049]
        os.truncate(newest, 1000)
        monkeypatch.setattr(_index, "file_health", broker_expires_it_first)
        with caplog.at_level(logging.INFO, logger="rmqarrow"):
            assert s.query("T", "k", max_num=100) == WANT
        assert str(newest) in caplog.text and "skipped damaged" not in caplog.text


def test_a_file_truncated_under_an_open_store_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = _store(tmp_path / "s", files=2)
    newest = d / "20231114221320001"
    with rmqarrow.open(d, hash_slot_num=SLOTS, index_num=INDEX) as s:
        assert s.query("T", "k", max_num=100)[:1] == [2049]
        os.truncate(newest, 1000)  # a crash, or a careless copy
        with caplog.at_level(logging.WARNING, logger="rmqarrow"):
            assert s.query("T", "k", max_num=100) == WANT  # the other file still answers
        assert f"skipped damaged file {newest}: truncated" in caplog.text
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="rmqarrow"):
            s.query("T", "k", max_num=100)
        assert "skipped" not in caplog.text  # named once, when it was left out


def test_the_command_line_and_the_library_warn_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli_run import run

    d = _store(tmp_path / "s", files=2)
    os.truncate(d / "20231114221320001", 1000)
    geo = ["--hash-slot-num", str(SLOTS), "--index-num", str(INDEX)]
    status, _out, err = run(capsys, "query", str(d), "--key", "T#k", *geo)
    assert status == 0
    assert f"warning: skipped damaged file {d / '20231114221320001'}: truncated" in err


def test_a_file_expired_under_an_open_store_is_left_out_with_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = _store(tmp_path / "s", files=2)
    oldest = d / "20231114221320000"
    with rmqarrow.open(d, hash_slot_num=SLOTS, index_num=INDEX) as s:
        assert len(s.query("T", "k", max_num=100)) == 100
        oldest.unlink()  # the broker's expiry
        with caplog.at_level(logging.INFO, logger="rmqarrow"):
            assert s.query("T", "k", max_num=100) == [2000 + i for i in range(49, -1, -1)]
        assert f"{oldest}: expired during the run (deleted), skipped" in caplog.text
