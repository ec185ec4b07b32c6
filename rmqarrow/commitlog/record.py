"""One decoded CommitLog message record.

Every header field is decoded eagerly (they are a few dozen bytes); the body stays in the
file: a :class:`Record` keeps its path, position and length, and :meth:`Record.read_body`
reads it on demand, inflating it if asked.  Properties are kept as the raw stored bytes
and decoded into a dict on access, with RocketMQ's own parsing rule.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import NamedTuple

from rmqarrow.commitlog._layout import (
    HEADER,
    HEADER_SIZE,
    MAGIC_V1,
    PROP_KEYS,
    PROP_TAGS,
    PROP_UNIQ_KEY,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
    decode_host,
    decode_properties,
    offset_msg_id,
    split_keys,
)
from rmqarrow.commitlog._walk import Buf
from rmqarrow.commitlog.compression import Compression, compression_of, inflate
from rmqarrow.errors import CommitLogError

__all__ = ["Record", "parse_record"]

_Q = struct.Struct(">q")
_IQI = struct.Struct(">iqi")
_H = struct.Struct(">h")


_host = functools.lru_cache(maxsize=4096)(decode_host)
_topic = functools.lru_cache(maxsize=4096)(
    functools.partial(bytes.decode, encoding="utf-8", errors="replace")
)


class Record(NamedTuple):
    """A message record, every stored field, in stored form (body not inflated)."""

    path: Path
    physical_offset: int
    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    sys_flag: int
    born_timestamp: int
    born_host_raw: bytes
    store_timestamp: int
    store_host_raw: bytes
    reconsume_times: int
    prepared_transaction_offset: int
    body_position: int
    body_length: int
    topic: str
    properties_raw: bytes

    @property
    def born_host(self) -> str:
        """Producer ``address:port`` (Java ``getHostAddress`` form)."""
        return _host(self.born_host_raw)

    @property
    def store_host(self) -> str:
        """Broker ``address:port`` (Java ``getHostAddress`` form)."""
        return _host(self.store_host_raw)

    @property
    def version(self) -> int:
        """Message version: 1 (1-byte topic length) or 2 (2-byte topic length)."""
        return 1 if self.magic == MAGIC_V1 else 2

    @property
    def properties_text(self) -> str:
        """The stored properties text (``name 0x01 value 0x02`` pairs)."""
        return self.properties_raw.decode("utf-8", errors="replace")

    @property
    def properties(self) -> dict[str, str]:
        """Properties as RocketMQ's ``string2messageProperties`` decodes them."""
        return decode_properties(self.properties_text)

    @property
    def keys(self) -> str | None:
        """The raw KEYS property (space separated), ``None`` when absent."""
        return self.properties.get(PROP_KEYS)

    @property
    def key_list(self) -> list[str]:
        """KEYS split on single spaces, empty tokens dropped (what the index holds)."""
        return split_keys(self.keys)

    @property
    def uniq_key(self) -> str | None:
        """The UNIQ_KEY property (client message id), ``None`` when absent."""
        return self.properties.get(PROP_UNIQ_KEY)

    @property
    def tags(self) -> str | None:
        """The TAGS property, ``None`` when absent."""
        return self.properties.get(PROP_TAGS)

    @property
    def transaction_type(self) -> int:
        """SYSFLAG & 0xC: 0 none, 0x4 prepared, 0x8 commit, 0xC rollback."""
        return self.sys_flag & SYSFLAG_TRANSACTION_MASK

    @property
    def compression(self) -> Compression | None:
        """How the stored body is compressed, from SYSFLAG; ``None`` when it is not."""
        return compression_of(self.sys_flag)

    @property
    def msg_id(self) -> str:
        """The offset message id (``MessageDecoder.createMessageId``)."""
        return offset_msg_id(self.store_host, self.physical_offset)

    @property
    def next_offset(self) -> int:
        """Physical offset just after this record."""
        return self.physical_offset + self.total_size

    def read_body(self, inflate_body: bool = False, limit: int | None = None) -> bytes:
        """The body bytes, read from the file now; inflated when asked and compressed
        (only the first ``limit`` inflated bytes when given)."""
        with open(self.path, "rb") as f:
            f.seek(self.body_position)
            body = f.read(self.body_length)
        if len(body) != self.body_length:
            raise CommitLogError(
                f"{self.path}: body of the record at physical offset {self.physical_offset} "
                f"is cut short ({len(body)} of {self.body_length} bytes)"
            )
        kind = self.compression if inflate_body else None
        if not kind:
            return body if limit is None else body[:limit]
        return inflate(body, kind, limit)


def parse_record(buf: Buf, pos: int, path: Path, file_start: int) -> Record:
    """Decode the record at ``pos``; its frame must already have passed ``check_record``."""
    h = HEADER.unpack_from(buf, pos)
    sys_flag = h[7]
    off = pos + HEADER_SIZE
    end = off + (20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8)
    born = bytes(buf[off:end])
    (store_ts,) = _Q.unpack_from(buf, end)
    off = end + 8
    end = off + (20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8)
    store = bytes(buf[off:end])
    reconsume, prepared, body_len = _IQI.unpack_from(buf, end)
    body_pos = end + 16
    off = body_pos + body_len
    if h[1] == MAGIC_V1:
        topic_len = buf[off]
        off += 1
    else:
        (topic_len,) = _H.unpack_from(buf, off)
        off += 2
    topic = _topic(bytes(buf[off : off + topic_len]))
    off += topic_len
    (props_len,) = _H.unpack_from(buf, off)
    off += 2
    return Record(
        path,
        h[6],
        h[0],
        h[1],
        h[2],
        h[3],
        h[4],
        h[5],
        sys_flag,
        h[8],
        born,
        store_ts,
        store,
        reconsume,
        prepared,
        body_pos,
        body_len,
        topic,
        bytes(buf[off : off + props_len]),
    )
