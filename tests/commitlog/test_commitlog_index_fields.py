"""The compiled index-record pass equals the vectorized numpy pass, byte for byte.

Both decode what the index build reads (topic, KEYS, UNIQ_KEY, offset, store time, SYSFLAG)
from real CommitLog files written by :class:`CommitLogWriter`; the properties are raw bytes
built from the pieces RocketMQ's rule turns on (separators, repeated and empty names and
values, a name inside a value, invalid UTF-8), so the two splitters meet every case.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqarrow import _optional
from rmqarrow.commitlog import CommitLogWriter, Message, decode_properties, index_records

_pieces = st.sampled_from(
    [
        b"KEYS",
        b"UNIQ_KEY",
        b"TAGS",
        b"\x01",
        b"\x02",
        b"a",
        b" ",
        "é".encode(),
        b"\xff",
        b"\xc3",
        b"K",
        b"S",
        b"k-1 k-2",
    ]
)
_props = st.lists(_pieces, max_size=14).map(b"".join)
_topics = st.sampled_from(["T", "TopicTest", "é-topic", "T" * 140])


def _batches(
    store: Path, numpy: bool, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> pa.Table:
    if numpy:
        monkeypatch.setenv("RMQARROW_NO_NUMBA", "1")
    else:
        monkeypatch.delenv("RMQARROW_NO_NUMBA", raising=False)
    _optional.reset_compiled()
    try:
        return pa.Table.from_batches(list(index_records(store, batch_rows=batch_rows)))
    finally:
        monkeypatch.delenv("RMQARROW_NO_NUMBA", raising=False)
        _optional.reset_compiled()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    msgs=st.lists(
        st.tuples(_topics, _props, st.integers(0, 300), st.sampled_from([0, 4, 8, 0xC])),
        min_size=1,
        max_size=40,
    ),
    batch_rows=st.sampled_from([1, 3, 65536]),
)
def test_compiled_pass_equals_numpy_pass(
    msgs: list[tuple[str, bytes, int, int]],
    batch_rows: int,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = tmp_path_factory.mktemp("log") / "commitlog"
    with CommitLogWriter(store, mapped_file_size=8192) as w:
        for i, (topic, props, body, flag) in enumerate(msgs):
            w.append(
                Message(
                    topic=topic,
                    body=b"x" * body,
                    properties_raw=props,
                    sys_flag=flag,
                    store_timestamp=1_700_000_000_000 + i,
                    born_host="10.0.0.1:1",
                    store_host="[2001:db8::5]:10911" if i % 3 == 0 else "10.0.0.2:10911",
                )
            )
    compiled = _batches(store, False, monkeypatch, batch_rows)
    numpy = _batches(store, True, monkeypatch, batch_rows)
    assert compiled.equals(numpy)
    assert compiled.num_rows == len(msgs)
    for row, (topic, props, _, flag) in zip(compiled.to_pylist(), msgs, strict=True):
        expected = decode_properties(props.decode("utf-8", errors="replace"))
        assert (row["keys"], row["uniq_key"]) == (expected.get("KEYS"), expected.get("UNIQ_KEY"))
        assert row["topic"] == topic and row["sys_flag"] & 0xF == flag  # + IPv6 host bits


def test_compiled_pass_is_in_use() -> None:
    """With numba installed the index records come from the compiled pass."""
    assert _optional.compiled_kernels("rmqarrow.commitlog._walk_numba") is not None
