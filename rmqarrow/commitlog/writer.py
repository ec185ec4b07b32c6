"""Writing CommitLog files as the broker does (for tests, demos and benchmarks).

The rules reproduced from ``CommitLog.DefaultAppendMessageCallback.doAppend`` and
``MessageExtEncoder``:

- a record's PHYSICALOFFSET is the file's start offset plus its position; QUEUEOFFSET is
  written as 0 for prepared and rollback records;
- BODYCRC is ``crc32(body) & 0x7FFFFFFF`` (0 for an empty body) unless given;
- version V2 (2-byte topic length) when the topic has more than 127 characters (Java
  ``String.length``), else V1;
- the properties text is ``name 0x01 value 0x02`` per pair;
- when ``record length + 8`` exceeds the bytes left in the file, an 8-byte blank record
  (TOTALSIZE = the bytes left, MAGIC_BLANK) closes the file and the record goes to the
  next file, named by its 20-digit start offset; every file is the full mapped size, the
  unwritten rest zero (a sparse tail on most file systems).

Existing files are never replaced: a file that already exists raises
:class:`OutputExistsError`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from rmqarrow._broker import check_store_writable
from rmqarrow._closing import Closing
from rmqarrow.commitlog._files import file_name
from rmqarrow.commitlog._layout import (
    HEADER,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MAX_PROPERTIES_LENGTH,
    PROP_KEYS,
    PROP_TAGS,
    PROP_UNIQ_KEY,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    SYSFLAG_TRANSACTION_MASK,
    SYSFLAG_TRANSACTION_PREPARED,
    SYSFLAG_TRANSACTION_ROLLBACK,
    body_crc,
    encode_host,
    encode_properties,
    record_length,
)
from rmqarrow.commitlog.record import Record
from rmqarrow.errors import CommitLogError, InvalidValueError, OutputExistsError

__all__ = [
    "DEFAULT_MAPPED_FILE_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "AppendMessageResult",
    "CommitLogWriter",
    "Message",
    "encode_record",
    "write_commitlog",
]

DEFAULT_MAPPED_FILE_SIZE = 1024 * 1024 * 1024  # mappedFileSizeCommitLog
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # maxMessageSize
_BLANK = struct.Struct(">ii")
_FLUSH_BYTES = 8 * 1024 * 1024


def _java_length(text: str) -> int:
    """``String.length()``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


@dataclass
class Message:
    """A message to append: the stored fields, in stored form (a compressed body stays so).

    ``keys`` may be a string (space separated) or a list of keys.  The properties text is
    UNIQ_KEY, KEYS, TAGS (those given) and then ``properties`` in their order, unless
    ``properties_raw`` gives the exact stored bytes.  ``body_crc`` and ``version`` are
    computed when ``None``.  The IPv6 host bits of ``sys_flag`` are set from the hosts.
    """

    topic: str
    body: bytes = b""
    keys: str | Sequence[str] | None = None
    tags: str | None = None
    uniq_key: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    properties_raw: bytes | None = None
    queue_id: int = 0
    queue_offset: int = 0
    flag: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    store_timestamp: int = 0
    born_host: str = "127.0.0.1:0"
    store_host: str = "127.0.0.1:10911"
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int | None = None
    version: int | None = None

    @classmethod
    def from_record(cls, record: Record, body: bytes | None = None) -> Message:
        """A message that re-encodes to the very bytes of ``record``."""
        return cls(
            topic=record.topic,
            body=record.read_body() if body is None else body,
            properties_raw=record.properties_raw,
            queue_id=record.queue_id,
            queue_offset=record.queue_offset,
            flag=record.flag,
            sys_flag=record.sys_flag,
            born_timestamp=record.born_timestamp,
            store_timestamp=record.store_timestamp,
            born_host=record.born_host,
            store_host=record.store_host,
            reconsume_times=record.reconsume_times,
            prepared_transaction_offset=record.prepared_transaction_offset,
            body_crc=record.body_crc,
            version=record.version,
        )

    def properties_bytes(self) -> bytes:
        """The stored properties text, UTF-8."""
        if self.properties_raw is not None:
            return self.properties_raw
        props: dict[str, str] = {}
        if self.uniq_key is not None:
            props[PROP_UNIQ_KEY] = self.uniq_key
        if self.keys is not None:
            props[PROP_KEYS] = self.keys if isinstance(self.keys, str) else " ".join(self.keys)
        if self.tags is not None:
            props[PROP_TAGS] = self.tags
        for k, v in self.properties.items():
            props.setdefault(k, v)
        return encode_properties(props).encode("utf-8")


def encode_record(message: Message, physical_offset: int) -> bytes:
    """The stored bytes of ``message`` at ``physical_offset`` (``MessageExtEncoder.encode``)."""
    m = message
    topic = m.topic.encode("utf-8")
    version = m.version or (2 if _java_length(m.topic) > 127 else 1)
    if version not in (1, 2):
        raise CommitLogError(f"message version must be 1 or 2, got {version}")
    if version == 1 and len(topic) > 127:
        raise CommitLogError(
            f"topic of {len(topic)} UTF-8 bytes does not fit the 1-byte length of V1; use V2"
        )
    if len(topic) > 32767:
        raise CommitLogError(f"topic of {len(topic)} bytes is longer than 32767")
    props = m.properties_bytes()
    if len(props) > MAX_PROPERTIES_LENGTH:
        raise CommitLogError(f"properties of {len(props)} bytes exceed {MAX_PROPERTIES_LENGTH}")
    sys_flag = m.sys_flag
    if m.born_host.startswith("["):
        sys_flag |= SYSFLAG_BORNHOST_V6
    if m.store_host.startswith("["):
        sys_flag |= SYSFLAG_STOREHOST_V6
    tran = sys_flag & SYSFLAG_TRANSACTION_MASK
    queue_offset = (
        0
        if tran in (SYSFLAG_TRANSACTION_PREPARED, SYSFLAG_TRANSACTION_ROLLBACK)
        else m.queue_offset
    )
    total = record_length(len(m.body), len(topic), len(props), version, sys_flag)
    crc = body_crc(m.body) if m.body_crc is None else m.body_crc
    out = bytearray(
        HEADER.pack(
            total,
            MAGIC_V1 if version == 1 else MAGIC_V2,
            crc,
            m.queue_id,
            m.flag,
            queue_offset,
            physical_offset,
            sys_flag,
            m.born_timestamp,
        )
    )
    out += encode_host(m.born_host, bool(sys_flag & SYSFLAG_BORNHOST_V6))
    out += struct.pack(">q", m.store_timestamp)
    out += encode_host(m.store_host, bool(sys_flag & SYSFLAG_STOREHOST_V6))
    out += struct.pack(">iqi", m.reconsume_times, m.prepared_transaction_offset, len(m.body))
    out += m.body
    out += struct.pack(">b" if version == 1 else ">h", len(topic))
    out += topic
    out += struct.pack(">h", len(props))
    out += props
    assert len(out) == total
    return bytes(out)


@dataclass(frozen=True)
class AppendMessageResult:
    """Where an appended record went (RocketMQ's ``AppendMessageResult``: offset and size;
    not the tiered index's put status, :class:`rmqarrow.tiered.AppendResult`)."""

    physical_offset: int
    total_size: int
    path: Path


class CommitLogWriter(Closing):
    """Append messages to new CommitLog files in ``commitlog_dir``.

    ``with CommitLogWriter(dir, mapped_file_size=65536) as w: w.append(msg)``; on close the
    current file is extended with zeros to the mapped size, like the broker's
    preallocated file.  ``start_offset`` (a multiple of the mapped size) names the first file.
    ``preallocate=True`` gives each new file its full mapped size as soon as it is created
    (the unwritten rest zero), as a running broker's mapped files are.  The CommitLog of a
    store a RocketMQ broker is running on is refused (:mod:`rmqarrow._broker`; ``force``
    only for a copy whose ``abort`` is left without a ``lock`` file).
    """

    def __init__(
        self,
        commitlog_dir: str | os.PathLike[str],
        *,
        mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE,
        start_offset: int = 0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        preallocate: bool = False,
        force: bool = False,
    ) -> None:
        check_store_writable(commitlog_dir, force=force)
        if mapped_file_size < 8:
            raise InvalidValueError(f"mapped_file_size must be at least 8, got {mapped_file_size}")
        if start_offset < 0 or start_offset % mapped_file_size:
            raise InvalidValueError(
                f"start_offset {start_offset} is not a multiple of the mapped file size "
                f"{mapped_file_size}"
            )
        self.commitlog_dir = Path(commitlog_dir)
        self.mapped_file_size = mapped_file_size
        self.max_message_size = max_message_size
        self.preallocate = preallocate
        self.files: list[Path] = []
        self._file_start = start_offset
        self._pos = 0
        self._out: BinaryIO | None = None
        self._pending = bytearray()
        self.commitlog_dir.mkdir(parents=True, exist_ok=True)
        first = self.commitlog_dir / file_name(start_offset)
        if first.exists():
            raise OutputExistsError(f"{first} already exists; CommitLogWriter never overwrites")

    @property
    def write_offset(self) -> int:
        """Physical offset the next record would get (if it fits in the current file)."""
        return self._file_start + self._pos

    def _open(self) -> BinaryIO:
        if self._out is None:
            path = self.commitlog_dir / file_name(self._file_start)
            try:
                self._out = open(path, "xb")  # noqa: SIM115 - closed in _finish_file
            except FileExistsError:
                raise OutputExistsError(
                    f"{path} already exists; CommitLogWriter never overwrites"
                ) from None
            self.files.append(path)
            if self.preallocate:
                self._out.truncate(self.mapped_file_size)
        return self._out

    def _flush(self) -> None:
        if self._pending:
            self._open().write(self._pending)
            self._pending.clear()

    def flush(self) -> None:
        """Hand what was appended to the file system, where readers see it."""
        if self._pending:
            self._flush()
        if self._out is not None:
            self._out.flush()

    def _finish_file(self) -> None:
        out = self._open()
        self._flush()
        out.truncate(self.mapped_file_size)
        out.close()
        self._out = None

    def append(self, message: Message | Mapping[str, Any]) -> AppendMessageResult:
        """Append one message (a :class:`Message` or a dict of its fields)."""
        msg = message if isinstance(message, Message) else Message(**message)
        record = encode_record(msg, 0)
        if len(record) > self.max_message_size:
            raise CommitLogError(
                f"message of {len(record)} bytes exceeds max_message_size {self.max_message_size}"
            )
        if len(record) + 8 > self.mapped_file_size:
            raise CommitLogError(
                f"message of {len(record)} bytes does not fit a file of {self.mapped_file_size}"
            )
        free = self.mapped_file_size - self._pos
        if len(record) + 8 > free:
            self._open()
            self._pending += _BLANK.pack(free, MAGIC_BLANK)
            self._finish_file()
            self._file_start += self.mapped_file_size
            self._pos = 0
        offset = self._file_start + self._pos
        record = record[:28] + struct.pack(">q", offset) + record[36:]
        self._open()
        self._pending += record
        self._pos += len(record)
        if len(self._pending) >= _FLUSH_BYTES:
            self._flush()
        return AppendMessageResult(offset, len(record), self.files[-1])

    def extend(self, messages: Iterable[Message | Mapping[str, Any]]) -> None:
        """Append every message in order."""
        for m in messages:
            self.append(m)

    def close(self) -> list[Path]:
        """Finish the current file (zero tail to the mapped size); the files written."""
        if self._out is not None:
            self._finish_file()
        return list(self.files)


def write_commitlog(
    commitlog_dir: str | os.PathLike[str],
    messages: Iterable[Message | Mapping[str, Any]],
    *,
    mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE,
    start_offset: int = 0,
) -> list[Path]:
    """Write ``messages`` as a new CommitLog; the files created, oldest first."""
    with CommitLogWriter(
        commitlog_dir, mapped_file_size=mapped_file_size, start_offset=start_offset
    ) as w:
        w.extend(messages)
    return list(w.files)
