"""The CommitLog record layout, written down once.

Every integer is big-endian.  A message record (``MessageExtEncoder.encode`` as the broker's
``DefaultAppendMessageCallback.doAppend`` stores it) is::

    0  TOTALSIZE      int32   whole record length, these 4 bytes included
    4  MAGICCODE      int32   MAGIC_V1, MAGIC_V2, or MAGIC_BLANK (end-of-file blank record)
    8  BODYCRC        int32   crc32(stored body) & 0x7FFFFFFF, 0 for an empty body
    12 QUEUEID        int32
    16 FLAG           int32   user flag
    20 QUEUEOFFSET    int64   0 for prepared and rollback records
    28 PHYSICALOFFSET int64   file start offset + position in the file
    36 SYSFLAG        int32   bits below
    40 BORNTIMESTAMP  int64   epoch ms
    48 BORNHOST       4-byte IPv4 + int32 port, or 16-byte IPv6 + port (SYSFLAG_BORNHOST_V6)
       STORETIMESTAMP int64
       STOREHOST      8 or 20 bytes (SYSFLAG_STOREHOST_V6)
       RECONSUMETIMES int32
       PREPARED_TRANSACTION_OFFSET int64
       BODY           int32 length + bytes (stored, possibly compressed)
       TOPIC          V1: int8 length, V2: int16 length, then UTF-8 bytes
       PROPERTIES     int16 length, then UTF-8 text: name 0x01 value 0x02, per pair

The end-of-file blank record is 8 bytes (TOTALSIZE = the bytes left in the file, then
MAGIC_BLANK); the broker writes it when a message (plus 8) no longer fits.  The current
(last) file ends in a zero tail: the next TOTALSIZE reads 0.

Nothing else in :mod:`rmqarrow.commitlog` hard-codes an offset: it uses the constants and
helpers here.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib

from rmqarrow.errors import InvalidValueError

__all__ = [
    "BLANK_SIZE",
    "FILE_NAME_DIGITS",
    "HEADER",
    "HEADER_SIZE",
    "MAGIC_BLANK",
    "MAGIC_V1",
    "MAGIC_V2",
    "MAX_PROPERTIES_LENGTH",
    "MIN_RECORD_SIZE",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "PROP_KEYS",
    "PROP_TAGS",
    "PROP_UNIQ_KEY",
    "SYSFLAG_BORNHOST_V6",
    "SYSFLAG_COMPRESSED",
    "SYSFLAG_COMPRESSION_LZ4",
    "SYSFLAG_COMPRESSION_MASK",
    "SYSFLAG_COMPRESSION_ZLIB",
    "SYSFLAG_COMPRESSION_ZSTD",
    "SYSFLAG_MULTI_TAGS",
    "SYSFLAG_STOREHOST_V6",
    "SYSFLAG_TRANSACTION_COMMIT",
    "SYSFLAG_TRANSACTION_MASK",
    "SYSFLAG_TRANSACTION_NOT_TYPE",
    "SYSFLAG_TRANSACTION_PREPARED",
    "SYSFLAG_TRANSACTION_ROLLBACK",
    "VERSION_BY_MAGIC",
    "body_crc",
    "decode_host",
    "decode_properties",
    "encode_host",
    "encode_properties",
    "host_length",
    "offset_msg_id",
    "record_length",
    "split_keys",
]

MAGIC_V1 = -626843481  # 0xDAA320A7
MAGIC_V2 = -626843477  # 0xDAA320AB
MAGIC_BLANK = -875286124  # 0xCBD43194
VERSION_BY_MAGIC = {MAGIC_V1: 1, MAGIC_V2: 2}

#: The fixed part up to BORNHOST: TOTALSIZE .. BORNTIMESTAMP.
HEADER = struct.Struct(">iiiiiqqiq")
HEADER_SIZE = HEADER.size  # 48
assert HEADER_SIZE == 48
BLANK_SIZE = 8  # TOTALSIZE + MAGICCODE; also the broker's END_FILE_MIN_BLANK_LENGTH

#: A V1 record with IPv4 hosts, empty body, empty topic and no properties.
MIN_RECORD_SIZE = HEADER_SIZE + 8 + 8 + 8 + 4 + 8 + 4 + 1 + 2  # 91
MAX_PROPERTIES_LENGTH = 32767  # Short.MAX_VALUE: the broker refuses longer properties
FILE_NAME_DIGITS = 20

SYSFLAG_COMPRESSED = 0x1
SYSFLAG_MULTI_TAGS = 0x2
SYSFLAG_TRANSACTION_MASK = 0xC
SYSFLAG_TRANSACTION_NOT_TYPE = 0x0
SYSFLAG_TRANSACTION_PREPARED = 0x4
SYSFLAG_TRANSACTION_COMMIT = 0x8
SYSFLAG_TRANSACTION_ROLLBACK = 0xC
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
SYSFLAG_COMPRESSION_MASK = 0x700
#: CompressionType values shifted by 8; type 0 with the compressed bit means ZLIB (older clients).
SYSFLAG_COMPRESSION_LZ4 = 0x100
SYSFLAG_COMPRESSION_ZSTD = 0x200
SYSFLAG_COMPRESSION_ZLIB = 0x300

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
PROP_KEYS = "KEYS"
PROP_UNIQ_KEY = "UNIQ_KEY"
PROP_TAGS = "TAGS"

_PORT = struct.Struct(">i")


def host_length(sys_flag: int, v6_bit: int) -> int:
    """Bytes of a host field: 8 (IPv4 + port) or 20 (IPv6 + port)."""
    return 20 if sys_flag & v6_bit else 8


def record_length(
    body_length: int, topic_length: int, properties_length: int, version: int, sys_flag: int
) -> int:
    """TOTALSIZE of a message record, as ``MessageExtEncoder.calMsgLength`` computes it."""
    return (
        HEADER_SIZE
        + host_length(sys_flag, SYSFLAG_BORNHOST_V6)
        + 8
        + host_length(sys_flag, SYSFLAG_STOREHOST_V6)
        + 4
        + 8
        + 4
        + body_length
        + (1 if version == 1 else 2)
        + topic_length
        + 2
        + properties_length
    )


def body_crc(body: bytes) -> int:
    """``UtilAll.crc32``: CRC-32 with the top bit cleared (0 for an empty body)."""
    return zlib.crc32(body) & 0x7FFFFFFF if body else 0


def decode_host(raw: bytes | memoryview) -> str:
    """``address:port`` as Java's ``getHostAddress()`` writes it.

    IPv4 is dotted decimal; IPv6 is ``[a:b:...]`` with 8 lower-case groups and no ``::``
    shortening.  A 16-byte IPv4-mapped address (``::ffff:a.b.c.d``) is an ``Inet4Address``
    in Java, so it prints dotted, as RocketMQ's decoder does.
    """
    raw = bytes(raw)
    (port,) = _PORT.unpack_from(raw, len(raw) - 4)
    addr = raw[:-4]
    if len(addr) == 16 and addr[:12] == b"\x00" * 10 + b"\xff\xff":
        addr = addr[12:]
    if len(addr) == 4:
        return f"{addr[0]}.{addr[1]}.{addr[2]}.{addr[3]}:{port}"
    groups = ":".join(f"{(addr[i] << 8) | addr[i + 1]:x}" for i in range(0, 16, 2))
    return f"[{groups}]:{port}"


def encode_host(host: str, v6: bool) -> bytes:
    """The stored bytes of ``address:port`` (4 or 16 address bytes, then the int32 port).

    ``v6`` asks for the 16-byte form; an IPv4 address is then written IPv4-mapped, which
    :func:`decode_host` reads back as the same text.
    """
    addr_text, sep, port_text = host.rpartition(":")
    if not sep:
        raise InvalidValueError(f"host {host!r}: expected address:port")
    addr_text = addr_text.removeprefix("[").removesuffix("]")
    addr = ipaddress.ip_address(addr_text)
    packed = addr.packed
    if isinstance(addr, ipaddress.IPv4Address) and v6:
        packed = b"\x00" * 10 + b"\xff\xff" + packed
    elif isinstance(addr, ipaddress.IPv6Address) and not v6:
        raise InvalidValueError(f"host {host!r} is IPv6 but the record's host field is IPv4")
    return packed + _PORT.pack(int(port_text))


def offset_msg_id(store_host: str, physical_offset: int) -> str:
    """``MessageDecoder.createMessageId``: hex of store address, port and physical offset."""
    raw = encode_host(store_host, v6=store_host.startswith("["))
    return (raw + struct.pack(">q", physical_offset)).hex().upper()


def decode_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``.

    Pairs are split on 0x02, then at the first 0x01; a pair with an empty name or an empty
    value is dropped, and a repeated name keeps its last value (``HashMap.put``).
    """
    props: dict[str, str] = {}
    for item in text.split(PROPERTY_SEPARATOR):
        i = item.find(NAME_VALUE_SEPARATOR)
        if 0 < i < len(item) - 1:
            props[item[:i]] = item[i + 1 :]
    return props


def encode_properties(props: dict[str, str]) -> str:
    """``MessageDecoder.messageProperties2String``: ``name 0x01 value 0x02`` per pair, in order."""
    return "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in props.items())


def split_keys(keys: str | None) -> list[str]:
    """The KEYS tokens the index holds: split on single spaces, empty tokens dropped."""
    if not keys:
        return []
    return [k for k in keys.split(" ") if k]
