"""The toy layout: a first line ``#toyindex v1``, then one entry per line,
``topic#key<TAB>phy_offset<TAB>store_timestamp_ms``, oldest first."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

MAGIC = "#toyindex v1"
SCHEMA = pa.schema([("key", pa.string()), ("phy_offset", pa.int64()), ("store_ms", pa.int64())])


def detect(path: Path) -> tuple[str, str] | None:
    """``("toy_file", detail)`` for a file starting with the magic line, else None."""
    if not path.is_file():
        return None
    with open(path, "rb") as fh:
        head = fh.read(len(MAGIC) + 1)
    if head != (MAGIC + "\n").encode():
        return None
    return "toy_file", "a toy index file"


def write(path: Path, entries: list[tuple[str, int, int]]) -> None:
    lines = [MAGIC] + [f"{key}\t{offset}\t{ms}" for key, offset, ms in entries]
    path.write_text("\n".join(lines) + "\n")


def read(path: Path) -> pa.Table:
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:] if line]
    return pa.table(
        {
            "key": [r[0] for r in rows],
            "phy_offset": [int(r[1]) for r in rows],
            "store_ms": [int(r[2]) for r in rows],
        },
        schema=SCHEMA,
    )
