"""Vectorized decoding of many records at once, from their positions in a mapped file.

After :func:`._walk.walk_file` has checked every frame and returned the record
positions, the fixed-width fields are gathered with numpy fancy indexing (big-endian
views) and the variable-width texts (topic, properties) are gathered into Arrow string
arrays in one copy.  KEYS and UNIQ_KEY are then taken from the properties with one RE2
regex each, which keeps ``string2messageProperties``' rule: the pair must start the text
or follow 0x02, its value is non-empty and runs to the next 0x02, and the last valid pair
of a repeated name wins.  No per-record Python code runs here except for rows whose text
is not valid UTF-8 (decoded with replacement, as Java does).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqarrow.commitlog._layout import (
    HEADER_SIZE,
    MAGIC_V1,
    PROP_KEYS,
    PROP_TAGS,
    PROP_UNIQ_KEY,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    decode_host,
    decode_properties,
)
from rmqarrow.commitlog._walk import Buf

__all__ = ["RecordColumns", "decode_columns", "property_column"]

_NP = np.ndarray[Any, Any]
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]+")


def _be(arr: _NP, idx: _NP, dtype: str) -> _NP:
    """Big-endian integers of ``dtype`` (e.g. ``>i4``) at byte offsets ``idx``."""
    width = np.dtype(dtype).itemsize
    raw = arr[idx[:, None] + np.arange(width, dtype=np.int64)]
    return np.ascontiguousarray(raw).view(dtype).ravel().astype(dtype[1:])


def _texts(arr: _NP, starts: _NP, lengths: _NP) -> pa.Array:
    """A string array of the byte ranges ``[start, start+length)``, one copy."""
    n = len(starts)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    data = arr[idx]
    binary = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    try:
        return binary.cast(pa.large_string()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array(
            [b.decode("utf-8", errors="replace") for b in binary.to_pylist()], pa.string()
        )


def property_column(properties: pa.Array, name: str) -> pa.Array:
    """The value of property ``name`` in each properties text, null when absent.

    One unanchored RE2 pass finds the pair that starts the text or follows 0x02; rows where
    ``name 0x01`` occurs more than once (a repeated name, or the text inside a value) are
    decoded with :func:`decode_properties` instead, so the last valid pair wins as in Java.
    """
    if not _PLAIN_NAME.fullmatch(name):
        return pa.array(
            [None if p is None else decode_properties(p).get(name) for p in properties.to_pylist()],
            pa.string(),
        )
    values = pc.struct_field(
        pc.extract_regex(properties, "(?:^|\x02)" + name + "\x01(?P<v>[^\x02]+)"), [0]
    )
    repeated = np.flatnonzero(
        np.asarray(pc.greater(pc.count_substring(properties, name + "\x01"), 1).fill_null(False))
    )
    if len(repeated) == 0:
        return values
    out = values.to_pylist()
    for i in repeated.tolist():
        out[i] = decode_properties(properties[i].as_py()).get(name)
    return pa.array(out, pa.string())


def _hosts(arr: _NP, starts: _NP, lengths: _NP) -> pa.Array:
    """Host texts (Java ``getHostAddress`` form).

    8-byte (IPv4) hosts are formatted vectorized; 20-byte (IPv6) hosts go through
    :func:`decode_host`, once per distinct value.
    """
    n = len(starts)
    v4 = np.flatnonzero(lengths == 8)
    out: list[str | None] = [None] * n
    if len(v4):
        s4 = starts[v4]
        parts = [pa.array(arr[s4 + k].astype(np.int32)).cast(pa.string()) for k in range(4)]
        port = pa.array(_be(arr, s4 + 4, ">i4")).cast(pa.string())
        dotted = pc.binary_join_element_wise(*parts, ".")
        text4 = pc.binary_join_element_wise(dotted, port, ":")
        if len(v4) == n:
            return text4
        for i, t in zip(v4.tolist(), text4.to_pylist(), strict=True):
            out[i] = t
    cache: dict[bytes, str] = {}
    for i in np.flatnonzero(lengths != 8).tolist():
        s = int(starts[i])
        raw = arr[s : s + int(lengths[i])].tobytes()
        text = cache.get(raw)
        if text is None:
            text = cache[raw] = decode_host(raw)
        out[i] = text
    return pa.array(out, pa.string())


class RecordColumns:
    """The decoded columns of a run of records of one file (numpy arrays, Arrow texts)."""

    born_host: pa.Array | None = None
    store_host: pa.Array | None = None

    def __init__(self, buf: Buf, positions: list[int] | _NP, file_start: int, full: bool) -> None:
        arr = np.frombuffer(buf, dtype=np.uint8)
        try:
            pos = np.asarray(positions, dtype=np.int64)
            self.n = len(pos)
            self.positions = pos
            self.physical_offset = pos + file_start
            self.magic = _be(arr, pos + 4, ">i4")
            self.sys_flag = _be(arr, pos + 36, ">i4")
            born_len = np.where(self.sys_flag & SYSFLAG_BORNHOST_V6, 20, 8).astype(np.int64)
            store_len = np.where(self.sys_flag & SYSFLAG_STOREHOST_V6, 20, 8).astype(np.int64)
            born_pos = pos + HEADER_SIZE
            off = born_pos + born_len
            self.store_timestamp = _be(arr, off, ">i8")
            store_pos = off + 8
            off = store_pos + store_len
            self.body_length = _be(arr, off + 12, ">i4").astype(np.int64)
            if full:
                self.total_size = _be(arr, pos, ">i4")
                self.body_crc = _be(arr, pos + 8, ">i4")
                self.queue_id = _be(arr, pos + 12, ">i4")
                self.flag = _be(arr, pos + 16, ">i4")
                self.queue_offset = _be(arr, pos + 20, ">i8")
                self.born_timestamp = _be(arr, pos + 40, ">i8")
                self.reconsume_times = _be(arr, off, ">i4")
                self.prepared_transaction_offset = _be(arr, off + 4, ">i8")
                self.born_host = _hosts(arr, born_pos, born_len)
                self.store_host = _hosts(arr, store_pos, store_len)
            off = off + 16 + self.body_length
            v1 = self.magic == MAGIC_V1
            topic_len = np.where(v1, arr[off].astype(np.int64), 0)
            if not v1.all():
                v2 = ~v1
                topic_len[v2] = _be(arr, off[v2], ">i2")
            topic_start = off + np.where(v1, 1, 2)
            self.topic = _texts(arr, topic_start, topic_len)
            off = topic_start + topic_len
            props_len = _be(arr, off, ">i2").astype(np.int64)
            self.properties = _texts(arr, off + 2, props_len)
        finally:
            del arr  # no view of the mapping may outlive this call

    def keys(self) -> pa.Array:
        return property_column(self.properties, PROP_KEYS)

    def uniq_key(self) -> pa.Array:
        return property_column(self.properties, PROP_UNIQ_KEY)

    def tags(self) -> pa.Array:
        return property_column(self.properties, PROP_TAGS)


def decode_columns(
    buf: Buf, positions: list[int] | _NP, file_start: int, full: bool = False
) -> RecordColumns:
    """Decode the records at ``positions`` (frames already checked) of one mapped file.

    Without ``full`` only what the index build reads is decoded (magic, SYSFLAG, store
    timestamp, body length, topic, properties); ``full`` adds every other header field and
    the host texts.
    """
    return RecordColumns(buf, positions, file_start, full)
