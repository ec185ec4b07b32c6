"""Query lists written by people: ``--queries FILE`` of ``rmqarrow query`` and ``verify``.

The golden fixtures' strict four-column form (:func:`rmqarrow.format.queries.
read_queries_tsv`) is what machines write; people write less.  A line here holds 1 to 4
tab-separated columns, ``key [max_num [begin [end]]]``; missing or empty columns take the
command's defaults, times are epoch ms or ISO 8601 (:func:`rmqarrow.format.times.
parse_time`), and a first line whose first column is a header word (``key``,
``index_key``, ...) or whose second column holds no digit (``key<TAB>max_num...``) is a
header and skipped; blank lines are skipped too (``#`` starts no comment: ``#`` alone is a
valid index key, an empty topic and key).  A count with a typo (``1O``, ``-3``) is refused
naming its line, and so is a file whose only line was taken for a header: silently asking
nothing would look like an index that holds nothing.
"""

from __future__ import annotations

import os

from rmqarrow.errors import InvalidValueError, UsageError
from rmqarrow.format.java import JAVA_LONG_MAX
from rmqarrow.format.queries import Query, unescape_text
from rmqarrow.format.text_file import STDIN, read_text_file, source_name
from rmqarrow.format.times import parse_time

__all__ = ["STDIN", "read_lines_file", "read_query_file", "read_text_file"]

_HEADER_WORDS = {"key", "index_key", "max_num", "maxnum", "begin", "end", "topic#key"}


def read_lines_file(path: str | os.PathLike[str], what: str = "keys file") -> list[str]:
    """The non-empty lines of a text file, with a clear error for a missing, directory,
    Parquet or binary file."""
    return [line.rstrip("\r") for line in read_text_file(path, what).split("\n") if line.strip()]


def read_query_file(
    path: str | os.PathLike[str],
    *,
    max_num: int = 64,
    begin: int = 0,
    end: int = JAVA_LONG_MAX,
    escaped: bool = False,
) -> list[Query]:
    """Queries from a 1-4 column TSV (see the module docstring); errors name the line."""
    p = source_name(path)
    text = read_text_file(path, "queries file")
    queries: list[Query] = []
    header: tuple[int, list[str]] | None = None  # the line taken for a header
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) > 4:
            raise InvalidValueError(
                f"{p}:{lineno}: {len(fields)} tab-separated columns, expected 1 to 4 "
                "(key, max_num, begin, end)"
            )
        if not queries and header is None and _is_header(fields):
            header = (lineno, fields)
            continue
        count = fields[1].strip() if len(fields) > 1 else ""
        if count and not _is_count(count):
            raise InvalidValueError(
                f"{p}:{lineno}: max_num {count!r} is not a count; expected an integer >= 0 "
                "(or leave the column empty for the default)"
            )
        try:
            key = unescape_text(fields[0]) if escaped else fields[0]
            n = int(count) if count else max_num
            b = parse_time(fields[2], "begin") if len(fields) > 2 and fields[2].strip() else begin
            e = parse_time(fields[3], "end") if len(fields) > 3 and fields[3].strip() else end
        except (ValueError, UsageError) as exc:
            raise InvalidValueError(f"{p}:{lineno}: {exc}") from None
        if n < 0:
            raise InvalidValueError(f"{p}:{lineno}: max_num must be >= 0, got {n}")
        queries.append(Query(key, n, b, e))
    if not queries and header is not None:
        lineno, fields = header
        if fields[0].strip().lower() in _HEADER_WORDS:
            raise InvalidValueError(
                f"{p}:{lineno}: a header line and no queries after it; add one query a line "
                "(key, optionally max_num, begin, end after tabs)"
            )
        raise InvalidValueError(
            f"{p}:{lineno}: the only line, taken for a header (its max_num column "
            f"{fields[1].strip()!r} is not a count); expected key<TAB>max_num with max_num "
            "an integer >= 0"
        )
    if not queries:
        raise InvalidValueError(
            f"{p}: no queries in the file (one key a line, optionally "
            "max_num, begin, end after tabs)"
        )
    return queries


def _is_header(fields: list[str]) -> bool:
    """A column-name line: a header word first, or a second column with no digit at all (a
    count with a typo, ``1O`` or ``-3``, is a query line whose count is then refused)."""
    if fields[0].strip().lower() in _HEADER_WORDS:
        return True
    count = fields[1].strip() if len(fields) > 1 else ""
    return bool(count) and not any(ch.isdigit() for ch in count)


def _is_count(text: str) -> bool:
    """A max_num as people write it: digits, with ``_`` separators as Python allows."""
    try:
        int(text)
    except ValueError:
        return False
    return True
