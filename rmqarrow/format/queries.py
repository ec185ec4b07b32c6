"""Query lists in the golden fixtures' TSV form, and the escaping some sets use.

A query line is ``key<TAB>max_num<TAB>begin<TAB>end`` with the full index key
(``topic#key``) and times in epoch ms.  Keys cannot hold TAB or line breaks in plain TSV,
so sets marked ``escaped`` write them as ``messages.tsv`` does: ``\\\\`` for a backslash,
``\\t``, ``\\n``, ``\\r``, and ``\\xHH`` for every other character below U+0020 and U+007F.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from rmqarrow.errors import InvalidKeyError, InvalidValueError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.records import KEY_SEPARATOR
from rmqarrow.format.text_file import read_text_file, source_name
from rmqarrow.format.times import as_epoch_ms

__all__ = [
    "Query",
    "QueryOffsetResult",
    "as_queries",
    "escape_text",
    "format_answers",
    "note_spaced_keys",
    "read_queries_tsv",
    "unescape_text",
]


class Query(NamedTuple):
    """One lookup: the full index key, how many offsets at most, and a closed ms range."""

    key: str
    max_num: int
    begin: int = 0
    end: int = JAVA_LONG_MAX


@dataclass(frozen=True)
class QueryOffsetResult:
    """RocketMQ's ``QueryOffsetResult``, what ``queryOffset`` answers, for the native index
    (``IndexService``) and the RocksDB index alike: the physical offsets found and the
    index's last update (the store timestamp and CommitLog offset it records).

    ``phy_offsets`` None is RocketMQ's null list, which only the RocksDB index returns
    (its bookkeeping values missing).  The tiered index answers with ``IndexItem`` lists
    instead, as RocketMQ's tiered ``queryAsync`` does.
    """

    phy_offsets: list[int] | None = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phy_offset: int = 0


_ESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)", re.DOTALL)


def unescape_text(text: str) -> str:
    """Undo :func:`escape_text`."""

    def repl(m: re.Match[str]) -> str:
        token = m.group(1)
        if token[0] == "x" and len(token) == 3:
            return chr(int(token[1:], 16))
        if token in _ESCAPES:
            return _ESCAPES[token]
        raise InvalidValueError(f"unknown escape \\{token} in {text!r}")

    return _ESCAPE_RE.sub(repl, text)


def escape_text(text: str) -> str:
    """Escape a key so it fits on one TSV field (the ``messages.tsv`` convention)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def read_queries_tsv(path: str | os.PathLike[str], escaped: bool = False) -> list[Query]:
    """Parse a queries file; a malformed line raises an error naming its line number."""
    queries = []
    text = read_text_file(path, "queries file")
    path = source_name(path)
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line == "" and lineno > text.count("\n"):
            break  # the final newline
        fields = line.split("\t")
        if len(fields) != 4:
            raise InvalidValueError(
                f"{path}:{lineno}: expected 4 tab-separated fields "
                f"(key, max_num, begin, end), found {len(fields)}"
            )
        try:
            numbers = [int(f) for f in fields[1:]]
        except ValueError:
            # int()'s own text names Python, not the file's columns
            raise InvalidValueError(
                f"{path}:{lineno}: max_num, begin and end must be integers (begin and end in "
                f"epoch ms), got {fields[1]!r}, {fields[2]!r}, {fields[3]!r}"
            ) from None
        try:
            key = unescape_text(fields[0]) if escaped else fields[0]
            queries.append(Query(key, *numbers))
        except ValueError as exc:
            raise InvalidValueError(f"{path}:{lineno}: {exc}") from None
    return queries


def note_spaced_keys(queries: Sequence[Query], answers: Sequence[Sequence[int]]) -> None:
    """One note (``rmqarrow.format.queries`` logger; the command line prints it) for the
    queries that found nothing with a key holding a space: RocketMQ splits a message's
    KEYS on spaces and indexes each word on its own, so no key it indexes holds one."""
    spaced = [
        q.key
        for q, a in zip(queries, answers, strict=False)
        if not a and KEY_SEPARATOR in q.key.partition("#")[2 if "#" in q.key else 0]
    ]
    if not spaced:
        return
    # a topic never holds '#': the key is all after the first one, as looked up
    topic, sep, key = spaced[0].partition("#") if "#" in spaced[0] else ("", "", spaced[0])
    words = ", ".join(f"{topic}{sep}{w}" for w in key.split(KEY_SEPARATOR) if w)
    logging.getLogger(__name__).info(
        "key %r holds a space: RocketMQ splits a message's KEYS on spaces and indexes each "
        "word on its own (%s), so no key it indexes holds one; look the words up one at a "
        "time%s",
        spaced[0],
        words,
        f" ({len(spaced)} such keys found nothing)" if len(spaced) > 1 else "",
    )


def format_answers(answers: Iterable[Sequence[int]]) -> str:
    """One line per answer, offsets comma-separated (an empty line for none)."""
    return "".join(",".join(str(o) for o in a) + "\n" for a in answers)


def _int_field(i: int, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValueError(f"query {i}: {name} must be an int, got {value!r}")
    return value


def as_queries(queries: Iterable[object]) -> list[Query]:
    """Queries given as :class:`Query` or as tuples ``(key, max_num[, begin[, end]])``,
    checked: a key that is not a ``str`` or a count that is not a non-negative int (bools
    and floats included) is refused naming the query; a bound is taken as the command line
    takes it (:func:`rmqarrow.format.times.as_epoch_ms`: epoch milliseconds, ISO 8601,
    datetimes), a bound in epoch *seconds* refused."""
    out: list[Query] = []
    for i, q in enumerate(queries):
        if not isinstance(q, tuple | list):  # a Query is a tuple
            hint = " is a bare key;" if isinstance(q, str) else f": {type(q).__name__};"
            raise InvalidValueError(
                f"query {i}{hint} give (key, max_num[, begin[, end]]) "
                "or rmqarrow.Query(key, max_num, begin, end)"
            )
        fields: tuple[object, ...] = tuple(q)
        if not 2 <= len(fields) <= 4:
            raise InvalidValueError(
                f"query {i}: expected (key, max_num[, begin[, end]]), got {len(fields)} values"
            )
        key = fields[0]
        if not isinstance(key, str):
            raise InvalidKeyError(f"query {i}: the key must be a str, got {type(key).__name__}")
        max_num = _int_field(i, "max_num", fields[1])
        begin = as_epoch_ms(f"query {i}: begin", fields[2]) if len(fields) > 2 else 0
        end = as_epoch_ms(f"query {i}: end", fields[3]) if len(fields) > 3 else JAVA_LONG_MAX
        if max_num < 0:
            raise InvalidValueError(f"query {i}: max_num must be >= 0, got {max_num}")
        out.append(Query(key, max_num, begin, end))
    return out
