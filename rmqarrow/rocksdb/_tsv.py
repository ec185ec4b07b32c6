"""The text form of messages and queries (the golden fixtures' TSV): one call a line.

Fields are TAB-separated UTF-8; ``\\N`` alone is null; ``\\\\``, ``\\t``, ``\\n``, ``\\r``
and ``\\xHH`` are escapes; spaces are not escaped (KEYS uses them as separators).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rmqarrow.errors import InvalidValueError
from rmqarrow.format.queries import unescape_text
from rmqarrow.format.text_file import read_text_file, source_name
from rmqarrow.rocksdb._walk import QueryOffsetResult, RocksDBQuery

__all__ = [
    "Message",
    "format_answer",
    "read_deletions",
    "read_expected",
    "read_messages",
    "read_queries",
]

NULL = "\\N"


@dataclass(frozen=True)
class Message:
    """The arguments of one ``buildIndex``."""

    topic: str | None
    keys: str | None
    tags: str | None
    uniq_key: str | None
    commit_log_offset: int
    store_timestamp: int
    sys_flag: int
    msg_size: int


def _text(field: str) -> str | None:
    return None if field == NULL else unescape_text(field)


def _lines(path: str | os.PathLike[str], width: int, columns: str = "") -> list[list[str]]:
    """The lines of ``path``, each ``width`` fields (named by ``columns`` in the refusal)."""
    out = []
    text = read_text_file(path, "TSV file")  # a --queries file may be stdin ("-")
    path = source_name(path)
    for n, line in enumerate(text.split("\n"), start=1):
        if line == "":
            continue
        fields = line.split("\t")
        if len(fields) != width:
            named = f" ({columns})" if columns else ""
            raise InvalidValueError(
                f"{path}:{n}: expected {width} TAB-separated fields{named}, got {len(fields)}"
            )
        out.append(fields)
    return out


def _int(path: str | os.PathLike[str], field: str) -> int:
    try:
        return int(field)
    except ValueError:
        raise InvalidValueError(f"{path}: expected an integer, got {field!r}") from None


def read_messages(path: str | os.PathLike[str]) -> list[Message]:
    """``topic, keys, tags, uniq_key, offset, store_timestamp, sys_flag, msg_size``."""
    return [
        Message(
            _text(f[0]),
            _text(f[1]),
            _text(f[2]),
            _text(f[3]),
            _int(path, f[4]),
            _int(path, f[5]),
            _int(path, f[6]),
            _int(path, f[7]),
        )
        for f in _lines(path, 8)
    ]


def read_deletions(path: str | os.PathLike[str]) -> list[tuple[str, int, int | None]]:
    """``(call, time, hours)``: ``expired_commitlog_creation_time T`` or
    ``delete_records_for_index STORE_TIME HOURS``."""
    out: list[tuple[str, int, int | None]] = []
    for f in _lines(path, 3):
        if f[0] not in ("expired_commitlog_creation_time", "delete_records_for_index"):
            raise InvalidValueError(f"{path}: unknown deletion call {f[0]!r}")
        out.append((f[0], _int(path, f[1]), _int(path, f[2]) if f[2] else None))
    return out


def read_queries(path: str | os.PathLike[str]) -> list[RocksDBQuery]:
    """``topic, key, index_type, max_num, begin, end, last_key``."""
    return [
        RocksDBQuery(
            _text(f[0]) or "",
            _text(f[1]) or "",
            _int(path, f[3]),
            _int(path, f[4]),
            _int(path, f[5]),
            _text(f[2]),
            _text(f[6]),
        )
        # every field on every line, as the golden query files hold them: say which
        for f in _lines(
            path,
            7,
            "topic, key, index_type, max_num, begin, end, last_key; \\N where none, no header line",
        )
    ]


def format_answer(answer: QueryOffsetResult | None) -> list[str]:
    """``result, phy_offsets, count, last_update_timestamp, last_update_phyoffset``."""
    if answer is None:
        return ["null", "", "", "", ""]
    offsets = answer.phy_offsets
    listed = "NULL" if offsets is None else ",".join(str(o) for o in offsets)
    count = "0" if offsets is None else str(len(offsets))
    return [
        "ok",
        listed,
        count,
        str(answer.index_last_update_timestamp),
        str(answer.index_last_update_phy_offset),
    ]


def read_expected(path: str | os.PathLike[str]) -> list[list[str]]:
    """Per query line, its expected answer fields as :func:`format_answer` writes them."""
    return [f[1:] for f in _lines(path, 6)]
