"""The messages table against messages.tsv, and its Parquet file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from rmqarrow.converters.arrow.messages import (
    MESSAGES_SCHEMA,
    messages_reader,
    messages_table,
    split_keys_column,
    write_messages_parquet,
)

from rmqarrow.errors import CommitLogError, OutputExistsError

SAME = [
    "physical_offset",
    "total_size",
    "topic",
    "tags",
    "uniq_key",
    "queue_id",
    "queue_offset",
    "sys_flag",
    "flag",
    "born_timestamp",
    "store_timestamp",
    "born_host",
    "store_host",
    "body_crc",
    "body_length",
    "reconsume_times",
    "prepared_transaction_offset",
    "properties",
]


def test_messages_table_equals_messages_tsv(
    golden_commitlog: Path, messages_tsv: list[dict[str, object]]
) -> None:
    table = messages_table(golden_commitlog)
    assert table.schema == MESSAGES_SCHEMA
    rows = table.to_pylist()
    assert len(rows) == len(messages_tsv)
    for row, m in zip(rows, messages_tsv, strict=True):
        for name in SAME:
            assert row[name] == m[name], (name, m["physical_offset"])
        assert row["version"] == int(str(m["magic"])[1])
        assert row["keys_raw"] == m["keys"]
        raw = m["keys"]
        assert row["keys"] == (None if raw is None else [k for k in str(raw).split(" ") if k])


def test_every_field_is_described() -> None:
    for f in MESSAGES_SCHEMA:
        assert f.metadata and f.metadata[b"description"]
    assert MESSAGES_SCHEMA.metadata[b"rmqarrow.table"] == b"messages"


def test_split_keys_column() -> None:
    import pyarrow as pa

    got = split_keys_column(pa.array([None, " ", "a  b ", "x", ""], pa.string()))
    assert got.to_pylist() == [None, [], ["a", "b"], ["x"], []]


def test_streaming_batches(golden_commitlog: Path) -> None:
    reader = messages_reader(golden_commitlog, batch_rows=10)
    sizes = [b.num_rows for b in reader]
    assert max(sizes) == 10 and sum(sizes) == 300


def test_parquet(golden_commitlog: Path, tmp_path: Path) -> None:
    out = tmp_path / "messages.parquet"
    assert write_messages_parquet(golden_commitlog, out) == 300
    assert pq.read_table(out).equals(messages_table(golden_commitlog))
    with pytest.raises(OutputExistsError):
        write_messages_parquet(golden_commitlog, out)


def test_damage_removes_partial_parquet(store_copy: Path, tmp_path: Path) -> None:
    with open(store_copy / "00000000000000065536", "r+b") as f:
        f.seek(4)
        f.write(b"\0\0\0\1")
    out = tmp_path / "m.parquet"
    with pytest.raises(CommitLogError, match="bad magic"):
        write_messages_parquet(store_copy, out)
    assert not out.exists()


def test_duckdb_exact_join(golden_commitlog: Path) -> None:
    import duckdb

    messages = messages_table(golden_commitlog)  # noqa: F841 - read by DuckDB by name
    con = duckdb.connect()
    n = con.execute(
        "select count(*) from messages, unnest(keys) as t(k) where topic = 'OrderTopic' "
        "and k = 'k2'"
    ).fetchone()
    assert n is not None and n[0] >= 1
