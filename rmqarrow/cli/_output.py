"""Options shared by the commands; output helpers come from :mod:`rmqarrow._text`."""

from __future__ import annotations

from typing import Any

from rmqarrow._text import print_json, print_kv, print_table

__all__ = ["add_geometry_options", "print_json", "print_kv", "print_table"]


def add_geometry_options(parser: Any) -> None:
    """``--hash-slot-num`` / ``--index-num``, for every command that opens index files."""
    parser.add_argument(
        "--hash-slot-num",
        type=int,
        default=None,
        help="hash slots per file (default 5,000,000, or fitted from the file size at 1:4)",
    )
    parser.add_argument(
        "--index-num",
        type=int,
        default=None,
        help="entry positions per file (default 20,000,000, or fitted from the file size)",
    )
