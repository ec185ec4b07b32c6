"""Compressed message bodies: what RocketMQ's client compressors write, and back.

A producer compresses bodies of 4 KiB or more (``compressMsgBodyOverHowmuch``) and sets
SYSFLAG 0x1 plus the compression type in bits 0x700 (``CompressionType``: 1 LZ4, 2 ZSTD,
3 ZLIB; type 0 with the compressed bit is ZLIB, for messages from older clients).
The Java compressors write:

- ZLIB: ``java.util.zip.Deflater`` output, a zlib stream (stdlib :mod:`zlib`);
- LZ4: ``net.jpountz.lz4.LZ4FrameOutputStream``, the LZ4 *frame* format
  (the ``lz4`` package, :mod:`lz4.frame`);
- ZSTD: ``com.github.luben.zstd.ZstdOutputStream``, a zstd frame (``zstandard``).

LZ4 and ZSTD need their optional package; without it :class:`EngineUnavailableError`
names the package to install.
"""

from __future__ import annotations

import zlib
from typing import Any, Literal

from rmqarrow._optional import require
from rmqarrow.commitlog._layout import (
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_LZ4,
    SYSFLAG_COMPRESSION_MASK,
    SYSFLAG_COMPRESSION_ZLIB,
    SYSFLAG_COMPRESSION_ZSTD,
)
from rmqarrow.errors import CommitLogError, EngineUnavailableError, InvalidValueError

__all__ = ["Compression", "compress_body", "compression_of", "compression_sys_flag", "inflate"]

Compression = Literal["zlib", "lz4", "zstd"]

_BY_BITS: dict[int, Compression] = {
    0: "zlib",
    SYSFLAG_COMPRESSION_LZ4: "lz4",
    SYSFLAG_COMPRESSION_ZSTD: "zstd",
    SYSFLAG_COMPRESSION_ZLIB: "zlib",
}
_FLAGS: dict[str, int] = {
    "lz4": SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_LZ4,
    "zstd": SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZSTD,
    "zlib": SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZLIB,
}


def compression_of(sys_flag: int) -> Compression | None:
    """The compression of a stored body, from SYSFLAG; ``None`` when not compressed."""
    if not sys_flag & SYSFLAG_COMPRESSED:
        return None
    bits = sys_flag & SYSFLAG_COMPRESSION_MASK
    if bits not in _BY_BITS:
        raise CommitLogError(f"unknown compression type {bits >> 8} in SYSFLAG {sys_flag}")
    return _BY_BITS[bits]


def compression_sys_flag(kind: Compression) -> int:
    """The SYSFLAG bits a producer sets for a body compressed with ``kind``."""
    return _FLAGS[kind]


def _lz4() -> Any:
    return require("lz4.frame", "an LZ4-compressed body")


def _zstd() -> Any:
    return require("zstandard", "a ZSTD-compressed body")


def inflate(body: bytes, kind: Compression, limit: int | None = None) -> bytes:
    """Decompress a stored body (only its first ``limit`` bytes when given: a preview never
    inflates a whole multi-GB body); a corrupt body raises :class:`CommitLogError`."""
    try:
        if kind == "zlib":
            return zlib.decompressobj().decompress(body, limit or 0)
        if kind == "lz4":
            if limit is None:
                return bytes(_lz4().decompress(body))
            return bytes(_lz4().LZ4FrameDecompressor().decompress(body, max_length=limit))
        if kind == "zstd":
            reader = _zstd().ZstdDecompressor().stream_reader(body)
            return bytes(reader.read(-1 if limit is None else limit))
    except EngineUnavailableError:
        raise
    except Exception as exc:
        raise CommitLogError(f"{kind} body does not decompress: {exc}") from exc
    raise InvalidValueError(f"unknown compression {kind!r}")


def compress_body(body: bytes, kind: Compression, level: int = 5) -> bytes:
    """Compress as the Java client would (frame formats as above; level for zlib/zstd)."""
    if kind == "zlib":
        return zlib.compress(body, level)
    if kind == "lz4":
        return bytes(_lz4().compress(body))
    if kind == "zstd":
        return bytes(_zstd().ZstdCompressor(level=level).compress(body))
    raise InvalidValueError(f"unknown compression {kind!r}")
