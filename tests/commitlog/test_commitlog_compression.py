"""Compressed bodies: the three RocketMQ compressors, and a missing package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rmqarrow.commitlog import (
    Message,
    compress_body,
    compression_of,
    compression_sys_flag,
    inflate,
    iter_records,
    write_commitlog,
)
from rmqarrow.errors import CommitLogError, EngineUnavailableError

TEXT = b"line 1: the quick brown fox jumps over the lazy dog; " * 200


@pytest.mark.parametrize("kind", ["zlib", "lz4", "zstd"])
def test_round_trip_through_a_commitlog(tmp_path: Path, kind: str) -> None:
    body = compress_body(TEXT, kind)  # type: ignore[arg-type]
    assert len(body) < len(TEXT)
    sys_flag = compression_sys_flag(kind)  # type: ignore[arg-type]
    write_commitlog(
        tmp_path / "cl", [Message(topic="T", body=body, sys_flag=sys_flag)], mapped_file_size=65536
    )
    (r,) = iter_records(tmp_path / "cl")
    assert r.compression == kind
    assert r.read_body() == body
    assert r.read_body(inflate_body=True) == TEXT


def test_sys_flag_bits() -> None:
    assert compression_of(0) is None
    assert compression_of(0x1) == "zlib"  # older clients: no type bits
    assert compression_of(0x101) == "lz4"
    assert compression_of(0x201) == "zstd"
    assert compression_of(0x301) == "zlib"
    with pytest.raises(CommitLogError, match="unknown compression type 4"):
        compression_of(0x401)


def test_corrupt_body() -> None:
    with pytest.raises(CommitLogError, match="zlib body does not decompress"):
        inflate(b"not zlib", "zlib")


@pytest.mark.parametrize(("kind", "package"), [("lz4", "lz4"), ("zstd", "zstandard")])
def test_missing_package_is_named(monkeypatch: pytest.MonkeyPatch, kind: str, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)
    monkeypatch.setitem(sys.modules, f"{package}.frame", None)
    with pytest.raises(EngineUnavailableError, match=rf"needs {package}.*rmqarrow\[compression\]"):
        inflate(b"\x00", kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["zlib", "lz4", "zstd"])
def test_preview_never_inflates_a_whole_body(tmp_path: Path, kind: str) -> None:
    """``query --resolve --show`` previews a body: a 64 MiB compressed bomb is inflated only
    as far as the preview needs (bounded memory), and ``inflate(limit=)`` is exact."""
    import tracemalloc

    from rmqarrow.commitlog.resolution import format_message

    bomb = b"A" * (64 << 20)
    body = compress_body(bomb, kind)  # type: ignore[arg-type]
    assert inflate(body, kind, limit=10) == b"A" * 10  # type: ignore[arg-type]
    write_commitlog(
        tmp_path / "cl",
        [Message(topic="T", body=body, sys_flag=compression_sys_flag(kind))],  # type: ignore[arg-type]
        mapped_file_size=4 << 20,
    )
    (r,) = iter_records(tmp_path / "cl")
    del bomb
    tracemalloc.start()
    try:
        text = format_message(r)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "AAAA" in text and " ..." in text
    assert peak < 8 << 20, peak
