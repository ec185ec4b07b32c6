"""The writer: byte-identical golden files, broker-computed fields, round trips."""

from __future__ import annotations

import filecmp
import os
import random
import tempfile
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow.commitlog import (
    INDEX_RECORDS_SCHEMA,
    MAGIC_BLANK,
    CommitLogReader,
    index_records,
    iter_records,
)
from rmqarrow.commitlog._walk import record_positions
from rmqarrow.commitlog.writer import CommitLogWriter, Message, encode_record, write_commitlog
from rmqarrow.errors import CommitLogError, OutputExistsError


def test_golden_rewrite_is_byte_identical(golden_commitlog: Path, tmp_path: Path) -> None:
    out = tmp_path / "commitlog"
    files = write_commitlog(
        out,
        (Message.from_record(r) for r in iter_records(golden_commitlog)),
        mapped_file_size=65536,
    )
    assert [f.name for f in files] == sorted(p.name for p in golden_commitlog.iterdir())
    for f in files:
        assert filecmp.cmp(f, golden_commitlog / f.name, shallow=False), f.name


def test_computed_fields_equal_the_broker(golden_commitlog: Path) -> None:
    """CRC, version and sizes computed from scratch give the stored bytes."""
    for r in iter_records(golden_commitlog):
        msg = Message.from_record(r)
        msg.body_crc = None
        msg.version = None
        raw = encode_record(msg, r.physical_offset)
        with open(r.path, "rb") as f:
            f.seek(r.physical_offset - int(r.path.name))
            assert raw == f.read(r.total_size), r.physical_offset


def test_properties_text_as_rocketmq_encodes() -> None:
    msg = Message(topic="T", uniq_key="U1", keys=["a", "b"], tags="t", properties={"x": "1"})
    assert msg.properties_bytes() == b"UNIQ_KEY\x01U1\x02KEYS\x01a b\x02TAGS\x01t\x02x\x011\x02"


def test_blank_record_and_rolling(tmp_path: Path) -> None:
    out = tmp_path / "cl"
    size = len(encode_record(Message(topic="T", body=b"x" * 8), 0))  # 100 bytes
    with CommitLogWriter(out, mapped_file_size=512) as w:
        results = [w.append({"topic": "T", "body": b"x" * 8}) for _ in range(12)]
    # 5 records (500 bytes) + 12 left: 100 + 8 > 12 -> blank of 12 bytes
    assert [r.physical_offset for r in results[:6]] == [0, 100, 200, 300, 400, 512]
    assert size == 100
    data = (out / "00000000000000000000").read_bytes()
    assert len(data) == 512
    assert data[500:508] == (12).to_bytes(4, "big") + MAGIC_BLANK.to_bytes(4, "big", signed=True)
    assert data[508:] == bytes(4)
    assert [f.stat().st_size for f in sorted(out.iterdir())] == [512, 512, 512]
    assert [r.physical_offset for r in iter_records(out)] == [r.physical_offset for r in results]


def test_crc_version_and_queue_offset_rules(tmp_path: Path) -> None:
    out = tmp_path / "cl"
    msgs = [
        Message(topic="A" * 127, body=b"hello", queue_offset=7),
        Message(topic="B" * 128, body=b"", queue_offset=8),
        Message(topic="é" * 63, body=b"z", queue_offset=9, sys_flag=0x4),  # prepared
        Message(topic="C", queue_offset=10, sys_flag=0xC, born_host="[::1]:5"),  # rollback
    ]
    write_commitlog(out, msgs, mapped_file_size=4096)
    recs = list(iter_records(out))
    assert [r.version for r in recs] == [1, 2, 1, 1]
    assert recs[0].body_crc == zlib.crc32(b"hello") & 0x7FFFFFFF
    assert recs[1].body_crc == 0
    assert [r.queue_offset for r in recs] == [7, 8, 0, 0]
    assert recs[3].born_host == "[0:0:0:0:0:0:0:1]:5" and recs[3].sys_flag == 0xC | 0x10


def test_v1_topic_too_long_in_bytes() -> None:
    with pytest.raises(CommitLogError, match="V1"):
        encode_record(Message(topic="é" * 100, version=1), 0)


def test_never_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "cl"
    write_commitlog(out, [Message(topic="T")], mapped_file_size=1024)
    before = (out / "00000000000000000000").read_bytes()
    with pytest.raises(OutputExistsError):
        CommitLogWriter(out, mapped_file_size=1024)
    # a later file that exists is refused when the writer reaches it
    w = CommitLogWriter(out, mapped_file_size=1024, start_offset=1024)
    (out / "00000000000000002048").write_bytes(b"keep")
    for _ in range(5):  # 5 records of 192 bytes fill the file
        w.append(Message(topic="T", body=b"x" * 100))
    with pytest.raises(OutputExistsError):
        w.append(Message(topic="T", body=b"x" * 100))
    w.close()
    assert (out / "00000000000000000000").read_bytes() == before
    assert (out / "00000000000000002048").read_bytes() == b"keep"


def test_abandoned_iteration_releases_the_file(golden_commitlog: Path) -> None:
    records = iter_records(golden_commitlog)
    first = next(records)
    records.close()  # unmaps the file; must not raise BufferError
    assert first.physical_offset == 0
    gen = iter(CommitLogReader(golden_commitlog).records(start_offset=first.next_offset))
    assert next(gen).physical_offset == first.next_offset
    del gen


def test_message_too_large(tmp_path: Path) -> None:
    with (
        CommitLogWriter(tmp_path / "cl", mapped_file_size=256) as w,
        pytest.raises(CommitLogError, match="does not fit"),
    ):
        w.append(Message(topic="T", body=b"x" * 200))


# -- property tests -----------------------------------------------------------------

_name = st.text(
    st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=8,
)
_value = st.text(
    st.characters(blacklist_characters="\x02", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
)
_ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
_ipv6 = st.lists(st.integers(0, 0xFFFF), min_size=8, max_size=8).map(
    lambda g: "[" + ":".join(f"{x:x}" for x in g) + "]"
)
_host = st.builds(
    lambda a, p: f"{a}:{p}", st.one_of(_ipv4, _ipv6), st.integers(-(2**31), 2**31 - 1)
)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_message = st.builds(
    Message,
    topic=st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=140).filter(
        lambda t: len(t.encode()) <= 127 or len(t.encode("utf-16-le")) // 2 > 127
    ),
    body=st.binary(max_size=300),
    keys=st.one_of(st.none(), _value, st.lists(_value, max_size=3)),
    tags=st.one_of(st.none(), _value),
    uniq_key=st.one_of(st.none(), _value),
    properties=st.dictionaries(_name, _value, max_size=3),
    queue_id=_i32,
    queue_offset=_i64,
    flag=_i32,
    sys_flag=st.sampled_from([0, 1, 2, 4, 8, 12, 0x101, 0x301]),
    born_timestamp=_i64,
    store_timestamp=_i64,
    born_host=_host,
    store_host=_host,
    reconsume_times=_i32,
    prepared_transaction_offset=_i64,
)


def _is_ipv4_mapped(host: str) -> bool:
    return host.startswith("[0:0:0:0:0:ffff:")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_message, max_size=12), st.sampled_from([1024, 2048, 65536]))
def test_round_trip(messages: list[Message], mapped: int) -> None:
    messages = [m for m in messages if len(encode_record(m, 0)) + 8 <= mapped]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cl"
        files = write_commitlog(out, messages, mapped_file_size=mapped)
        assert all(os.path.getsize(f) == mapped for f in files)
        reader = CommitLogReader(out)
        recs = list(reader.records())
        assert len(recs) == len(messages)
        for m, r in zip(messages, recs, strict=True):
            assert r.topic == m.topic
            assert r.read_body() == m.body
            assert r.properties_raw == m.properties_bytes()
            expected_props = dict(m.properties)
            if m.uniq_key is not None:
                expected_props["UNIQ_KEY"] = m.uniq_key
            if m.keys is not None:
                expected_props["KEYS"] = m.keys if isinstance(m.keys, str) else " ".join(m.keys)
            if m.tags is not None:
                expected_props["TAGS"] = m.tags
            props = {k: v for k, v in expected_props.items() if v}
            assert r.properties == props
            for field in (
                "queue_id",
                "flag",
                "born_timestamp",
                "store_timestamp",
                "reconsume_times",
                "prepared_transaction_offset",
            ):
                assert getattr(r, field) == getattr(m, field)
            for host in ("born_host", "store_host"):
                if not _is_ipv4_mapped(getattr(m, host)):
                    assert getattr(r, host) == getattr(m, host)
            assert r.queue_offset == (0 if m.sys_flag & 0xC in (4, 12) else m.queue_offset)
        rows = pa.Table.from_batches(
            list(index_records(out)), schema=INDEX_RECORDS_SCHEMA
        ).to_pylist()
        assert rows == [
            {
                "topic": r.topic,
                "keys": r.keys,
                "uniq_key": r.uniq_key,
                "commit_log_offset": r.physical_offset,
                "store_timestamp": r.store_timestamp,
                "sys_flag": r.sys_flag,
            }
            for r in recs
        ]


@pytest.fixture(scope="module")
def golden_bytes(golden_commitlog: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(golden_commitlog.iterdir())}


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_random_damage_never_crashes(golden_bytes: dict[str, bytes], seed: int, n: int) -> None:
    """Random byte changes: records or CommitLogError, never another exception or a hang."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for name, data in golden_bytes.items():
            buf = bytearray(data)
            if name.endswith("0"):
                for _ in range(n):
                    buf[rng.randrange(0, 70000) % len(buf)] = rng.randrange(256)
            (out / name).write_bytes(bytes(buf))
        try:
            strict = [r.physical_offset for r in CommitLogReader(out).records()]
        except CommitLogError:
            strict = None
        reader = CommitLogReader(out, lenient=True)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lenient = [r.physical_offset for r in reader.records()]
        if strict is not None:
            assert lenient == strict and reader.problems == []
        assert lenient == sorted(lenient)
        # the compiled kernel and the Python walk find the same records and the same damage
        files = CommitLogReader(out).files
        for i, f in enumerate(files):
            data = (out / f.path.name).read_bytes()
            results = []
            for compiled in (True, False):
                pos, damage = record_positions(
                    data,
                    len(data),
                    65536,
                    f.start_offset,
                    0,
                    i == len(files) - 1,
                    compiled=compiled,
                )
                results.append((pos.tolist(), damage and (damage.position, damage.reason)))
            assert results[0] == results[1]
