"""Times and keys given to the Python API as to the command line: one parser, one rule.

``begin``/``end`` take epoch ms (numpy integers too), ISO 8601 strings and datetimes, as
``--begin``/``--end`` do; a local time in a DST gap is refused naming the gap (never
shifted); one in the repeated hour is the first of the two, with a note; begin after end
is refused by both; a key with a space gets a note, from the library.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_run import one_error, run

import rmqarrow
from rmqarrow.errors import InvalidValueError
from rmqarrow.format.times import parse_time
from rmqarrow.tiered import TieredIndexStore

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
GEO = ("--hash-slot-num", "16", "--index-num", "64")


@pytest.fixture
def berlin() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Berlin"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture(params=["UTC", "Europe/Berlin", "America/New_York"])
def local_zone(request: pytest.FixtureRequest) -> Iterator[dt.timedelta]:
    """Each zone in turn as the local zone; yields its offset in winter."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    try:
        yield dt.datetime(2023, 12, 30, 12).astimezone().utcoffset() or dt.timedelta()
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    d = tmp_path / "index"
    d.mkdir()
    with rmqarrow.IndexFile.create(d / "20231114221320000", 16, 64) as f:
        for i in range(20):
            f.put_key("T#k", 1000 + i, T0 + i * 1000)
        f.put_key("T#a", 5000, T0 + 30_000)
    return d


def test_begin_and_end_take_what_the_command_line_takes(store: Path, berlin: None) -> None:
    begin, end = T0 + 5_000, T0 + 9_000
    want = [1009, 1008, 1007, 1006, 1005]
    aware = dt.datetime(2023, 11, 14, 22, 13, 25, tzinfo=dt.UTC)
    naive_local = dt.datetime(2023, 11, 14, 23, 13, 25)  # Berlin is UTC+1 in November
    with rmqarrow.open(store) as s:
        assert s.query("T", "k", begin=begin, end=end) == want
        assert s.query("T", "k", begin=np.int64(begin), end=np.int64(end)) == want
        assert s.query("T", "k", begin=aware, end="2023-11-14T22:13:29Z") == want
        assert s.query("T", "k", begin=naive_local, end="2023-11-14T23:13:29") == want
        assert (
            s.query_many([("T#k", 64, aware, np.int64(end))]).column("phy_offset").to_pylist()
            == want
        )
        for bad in (1.5, True, None, np.float64(3.0)):
            with pytest.raises(InvalidValueError, match="begin must be epoch milliseconds"):
                s.query("T", "k", begin=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="looks like epoch seconds"):
            s.query("T", "k", begin=np.int64(1_700_000_000))


def test_begin_after_end_is_refused_alike(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with (
        rmqarrow.open(store) as s,
        pytest.raises(
            InvalidValueError, match=f"begin {T0 + 9000} is after end {T0}: the range is empty"
        ),
    ):
        s.query("T", "k", begin=T0 + 9_000, end=T0)
    refused = f"query 0: begin {T0 + 9000} is after query 0: end {T0}: the range is empty"
    with rmqarrow.open(store) as s:
        for ask in (s.query_many, s.answers):
            with pytest.raises(InvalidValueError, match=refused):
                ask([("T#k", 10, T0 + 9_000, T0)])
        assert s.answers([("T#k", 10, T0 + 9_000)]) == [list(range(1019, 1008, -1))[:10]]
    status, _out, err = run(
        capsys, "query", str(store), "--key", "T#k", "--begin", str(T0 + 9000), "--end", str(T0)
    )
    assert status == 2
    one_error(err, f"--begin {T0 + 9000} is after --end {T0}: the range is empty")


def test_tiered_query_many_refuses_begin_after_end(tmp_path: Path) -> None:
    with TieredIndexStore.open(tmp_path, 16, 64, writable=True, clock=lambda: T0) as t:
        for i in range(5):
            t.put_key("T", 1, 0, ["k"], 1000 + i, 100, T0 + i * 1000)
    with rmqarrow.open(tmp_path) as s:
        with pytest.raises(InvalidValueError, match=r"query 0: begin .* is after query 0: end"):
            s.query_many([("T", "k", 10, T0 + 3_000, T0)])
        assert s.query_many([("T", "k", 10, T0, T0 + 9_000)]).num_rows == 5


def test_a_local_time_in_a_dst_gap_is_refused_not_shifted(
    store: Path, berlin: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidValueError, match=r"no such local time.*CET to CEST"):
        parse_time("2024-03-31T02:30", "--begin")
    with rmqarrow.open(store) as s, pytest.raises(InvalidValueError, match="no such local time"):
        s.query("T", "k", begin=dt.datetime(2024, 3, 31, 2, 30))
    status, _out, err = run(
        capsys, "query", str(store), "--key", "T#k", "--begin", "2024-03-31T02:30"
    )
    assert status == 2
    one_error(err, "--begin 2024-03-31T02:30: no such local time", "+01:00 or +02:00")
    # either side of the gap, and the gap with an offset, are times
    assert parse_time("2024-03-31T01:59") == parse_time("2024-03-31T00:59Z")
    assert parse_time("2024-03-31T03:00") == parse_time("2024-03-31T01:00Z")
    assert parse_time("2024-03-31T02:30+01:00") == parse_time("2024-03-31T01:30Z")


def test_a_repeated_local_hour_is_the_first_with_a_note(
    berlin: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="rmqarrow"):
        first = parse_time("2024-10-27T02:30", "--end")
    assert first == parse_time("2024-10-27T02:30+02:00")  # summer time, the earlier
    assert "happens twice" in caplog.text and "2024-10-27T02:30:00+01:00" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="rmqarrow"):
        parse_time("2024-10-27T03:30", "--end")
    assert "happens twice" not in caplog.text


def test_times_at_the_ends_of_the_calendar_are_taken(
    store: Path, local_zone: dt.timedelta, capsys: pytest.CaptureFixture[str]
) -> None:
    # an open range typed as a date: the last second of year 9999, local
    last = 253_402_300_799_000 - local_zone // dt.timedelta(milliseconds=1)
    assert parse_time("9999-12-31T23:59:59", "--end") == last
    status, out, err = run(
        capsys, "query", str(store), "--key", "T#k", "--end", "9999-12-31T23:59:59"
    )
    assert status == 0 and "out of range" not in err and "bug" not in err
    assert "1019" in out
    with rmqarrow.open(store) as s:
        assert len(s.query("T", "k", end=dt.datetime(9999, 12, 31, 23, 59, 59))) == 20
        assert len(s.query("T", "k", end=dt.date(9999, 12, 31))) == 20
        assert len(s.query("T", "k", begin=dt.date(1, 1, 1), end="9999-12-31")) == 20
    assert parse_time("0001-01-02") < parse_time("1970-01-01T00:00Z")


def test_a_key_with_a_space_gets_a_note(
    store: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with rmqarrow.open(store) as s, caplog.at_level(logging.INFO, logger="rmqarrow"):
        assert s.query("T", "a b") == []
        assert s.query("T", "a") == [5000]
    assert "key 'T#a b' holds a space: RocketMQ splits a message's KEYS on spaces" in caplog.text
    assert "(T#a, T#b)" in caplog.text
    caplog.clear()
    with rmqarrow.open(store) as s, caplog.at_level(logging.INFO, logger="rmqarrow"):
        assert s.query("T", "order #5 x") == []
    assert "(T#order, T##5, T#x)" in caplog.text
    status, _out, err = run(capsys, "query", str(store), "--topic", "T", "--key", "a b")
    assert status == 0
    assert "note: key 'T#a b' holds a space" in err
