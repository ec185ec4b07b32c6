"""The toy format's engines: the native lookup (newest first, as RocketMQ walks a
chain) and the same answer in DuckDB SQL, each one function of the engine contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from toy_format.layout import read

Query = tuple[str, str, int, int, int]  # topic, key, max_num, begin, end


def answer_queries(source: Path, queries: list[Query], /, **_: Any) -> list[list[int]]:
    table = read(source).to_pylist()
    answers = []
    for topic, key, max_num, begin, end in queries:
        hits = [
            r["phy_offset"]
            for r in reversed(table)
            if r["key"] == f"{topic}#{key}" and begin <= r["store_ms"] <= end
        ]
        answers.append(hits[:max_num])
    return answers


def answer_queries_duckdb(source: Path, queries: list[Query], /, **_: Any) -> list[list[int]]:
    entries = read(source)
    con = duckdb.connect()
    try:
        con.register("entries", entries)
        answers = []
        for topic, key, max_num, begin, end in queries:
            rows = con.execute(
                "SELECT phy_offset FROM (SELECT *, row_number() OVER () AS n FROM entries) "
                "WHERE key = ? AND store_ms BETWEEN ? AND ? ORDER BY n DESC LIMIT ?",
                [f"{topic}#{key}", begin, end, max_num],
            ).fetchall()
            answers.append([r[0] for r in rows])
        return answers
    finally:
        con.close()
