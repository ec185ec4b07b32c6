"""Text files people give, read whole: a list of queries or keys, or standard input.

Below :mod:`rmqarrow.format.queries` (the strict TSV form machines write) and
:mod:`rmqarrow.format.query_file` (the loose form people write), which both read their
text here, with one clear error for a missing, directory, Parquet or binary file.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from rmqarrow.errors import StoreNotFoundError, UsageError

__all__ = ["STDIN", "read_text_file", "source_name"]

#: The path that names standard input (``--queries -``, as tools read a file from a pipe).
STDIN = "-"


def source_name(path: str | os.PathLike[str]) -> str:
    """``path`` as an error message names it (``stdin`` for :data:`STDIN`)."""
    return "stdin" if os.fspath(path) == STDIN else os.fspath(path)


def read_text_file(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of a list file people give (queries, keys), or of standard input for
    :data:`STDIN`, with one clear error for a missing, directory, Parquet or binary file."""
    return _read_text(Path(path), what)


def _read_text(path: Path, what: str) -> str:
    if os.fspath(path) == STDIN:
        if sys.stdin.isatty():  # typed by hand: say how it ends, rather than seem to hang
            logging.getLogger("rmqarrow").info(
                "reading the %s from stdin, one a line; end it with Ctrl-D", what
            )
        return _decoded(sys.stdin.buffer.read(), "stdin", what)
    if not path.exists():
        raise StoreNotFoundError(f"{path}: no such {what}")
    if path.is_dir():
        raise UsageError(f"{path}: a directory; expected a {what} (a text file)")
    return _decoded(path.read_bytes(), str(path), what)


def _decoded(raw: bytes, path: str, what: str) -> str:
    if raw[:4] == b"PAR1":
        raise UsageError(f"{path}: a Parquet file; expected a {what} (tab-separated text)")
    if b"\x00" in raw[:4096]:
        raise UsageError(f"{path}: binary data; expected a {what} (tab-separated text)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start}); expected a {what}") from None
