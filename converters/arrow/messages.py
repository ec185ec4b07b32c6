"""The ``messages`` table: every CommitLog message's metadata, next to files/slots/entries.

The index holds only key hashes; this table holds the real keys, so DuckDB and Spark can
join index entries (``phy_offset``) to messages (``physical_offset``) and answer exact-key
lookups without hash false positives, or check the index against the log.  One row per
message record in commit-log order, rollback and transaction records included; the body
itself is not copied (its length and CRC are).

Columns are fixed (:data:`MESSAGES_SCHEMA`); every field has a ``description`` in its
Arrow metadata.  ``keys`` is the KEYS property split on single spaces with empty tokens
dropped (the tokens the index holds), ``keys_raw`` the property as stored.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rmqarrow.converters.schema import SCHEMA_VERSION

from rmqarrow.commitlog import MAGIC_V1, CommitLogReader
from rmqarrow.commitlog.columns import decode_columns
from rmqarrow.errors import InvalidValueError, OutputExistsError

__all__ = [
    "MESSAGES_SCHEMA",
    "messages_batches",
    "messages_reader",
    "messages_table",
    "split_keys_column",
    "write_messages_parquet",
]

DEFAULT_BATCH_ROWS = 65_536


def _field(name: str, type_: pa.DataType, description: str, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"description": description})


MESSAGES_SCHEMA = pa.schema(
    [
        _field("physical_offset", pa.int64(), "commit-log physical offset of the record"),
        _field("total_size", pa.int32(), "TOTALSIZE: record length in bytes"),
        _field("version", pa.int8(), "message version: 1 (1-byte topic length) or 2"),
        _field("topic", pa.string(), "message topic"),
        _field("tags", pa.string(), "TAGS property; null when absent", nullable=True),
        _field(
            "keys",
            pa.list_(pa.field("item", pa.string(), nullable=False)),
            "KEYS split on single spaces, empty tokens dropped (the keys the index holds); "
            "null when KEYS is absent",
            nullable=True,
        ),
        _field("keys_raw", pa.string(), "KEYS property as stored; null when absent", True),
        _field("uniq_key", pa.string(), "UNIQ_KEY property (client msg id); null if absent", True),
        _field("queue_id", pa.int32(), "QUEUEID"),
        _field("queue_offset", pa.int64(), "QUEUEOFFSET (0 for prepared/rollback records)"),
        _field(
            "sys_flag",
            pa.int32(),
            "SYSFLAG: 0x1 compressed, 0xC transaction type, 0x10/0x20 "
            "IPv6 hosts, 0x700 compression type",
        ),
        _field("flag", pa.int32(), "FLAG: the producer's user flag"),
        _field("born_timestamp", pa.int64(), "BORNTIMESTAMP, epoch ms (producer clock)"),
        _field("store_timestamp", pa.int64(), "STORETIMESTAMP, epoch ms (broker clock)"),
        _field("born_host", pa.string(), "producer address:port (Java getHostAddress form)"),
        _field("store_host", pa.string(), "broker address:port (Java getHostAddress form)"),
        _field("body_crc", pa.int32(), "BODYCRC: crc32(stored body) & 0x7FFFFFFF"),
        _field("body_length", pa.int32(), "stored body length (compressed bodies not inflated)"),
        _field("reconsume_times", pa.int32(), "RECONSUMETIMES"),
        _field(
            "prepared_transaction_offset",
            pa.int64(),
            "PREPARED_TRANSACTION_OFFSET: the prepared/half message of a commit or rollback",
        ),
        _field("properties", pa.string(), "raw properties text: name 0x01 value 0x02 per pair"),
    ],
    metadata={"rmqarrow.table": "messages", "rmqarrow.schema_version": SCHEMA_VERSION},
)


def split_keys_column(keys_raw: pa.Array) -> pa.Array:
    """KEYS texts -> list<string> of their non-empty space-separated tokens (null stays null)."""
    split = pc.split_pattern(keys_raw, " ")
    values = split.flatten()
    parents = np.asarray(pc.list_parent_indices(split))
    keep = np.asarray(pc.not_equal(pc.binary_length(values), 0).fill_null(False))
    counts = np.bincount(parents[keep], minlength=len(keys_raw))
    offsets = np.zeros(len(keys_raw) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(
        pa.array(offsets),
        values.filter(pa.array(keep)),
        type=MESSAGES_SCHEMA.field("keys").type,
        mask=pc.is_null(keys_raw),
    )


def messages_batches(
    reader: CommitLogReader,
    *,
    start_offset: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    end_offset: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of :data:`MESSAGES_SCHEMA` over an open reader (never spanning two files);
    ``end_offset`` stops before the first file starting at or after it (one file a task)."""
    if batch_rows < 1:
        raise InvalidValueError(f"batch_rows must be >= 1, got {batch_rows}")
    for file, buf, positions in reader.positions(start_offset, end_offset):
        for lo in range(0, len(positions), batch_rows):
            c = decode_columns(buf, positions[lo : lo + batch_rows], file.start_offset, True)
            keys_raw = c.keys()
            version = np.where(c.magic == MAGIC_V1, 1, 2).astype(np.int8)
            columns = [
                pa.array(c.physical_offset, pa.int64()),
                pa.array(c.total_size, pa.int32()),
                pa.array(version, pa.int8()),
                c.topic,
                c.tags(),
                split_keys_column(keys_raw),
                keys_raw,
                c.uniq_key(),
                pa.array(c.queue_id, pa.int32()),
                pa.array(c.queue_offset, pa.int64()),
                pa.array(c.sys_flag, pa.int32()),
                pa.array(c.flag, pa.int32()),
                pa.array(c.born_timestamp, pa.int64()),
                pa.array(c.store_timestamp, pa.int64()),
                c.born_host,
                c.store_host,
                pa.array(c.body_crc, pa.int32()),
                pa.array(c.body_length.astype(np.int32), pa.int32()),
                pa.array(c.reconsume_times, pa.int32()),
                pa.array(c.prepared_transaction_offset, pa.int64()),
                c.properties,
            ]
            del c
            yield pa.RecordBatch.from_arrays(columns, schema=MESSAGES_SCHEMA)


def messages_reader(
    commitlog_dir: str | os.PathLike[str],
    *,
    start_offset: int = 0,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    lenient: bool = False,
    end_offset: int | None = None,
) -> pa.RecordBatchReader:
    """A streaming reader of the messages table (damage raises unless ``lenient``);
    ``end_offset`` stops before the first file starting at or after it."""
    reader = CommitLogReader(commitlog_dir, lenient=lenient)
    return pa.RecordBatchReader.from_batches(
        MESSAGES_SCHEMA,
        messages_batches(
            reader, start_offset=start_offset, batch_rows=batch_rows, end_offset=end_offset
        ),
    )


def messages_table(commitlog_dir: str | os.PathLike[str], *, lenient: bool = False) -> pa.Table:
    """The whole messages table in memory."""
    return messages_reader(commitlog_dir, lenient=lenient).read_all()


def write_messages_parquet(
    commitlog_dir: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    lenient: bool = False,
    start_offset: int = 0,
    end_offset: int | None = None,
) -> int:
    """Stream the messages table to a new Parquet file; the number of rows written.

    An existing ``out_path`` is refused (:class:`OutputExistsError`); a failed write
    removes its partial file.  ``start_offset``/``end_offset`` limit it to some files
    (the Spark exporter writes one part per CommitLog file).
    """
    out = Path(out_path)
    try:
        sink = open(out, "xb")  # noqa: SIM115 - closed below
    except FileExistsError:
        raise OutputExistsError(f"{out} already exists; refusing to overwrite it") from None
    rows = 0
    try:
        with sink, pq.ParquetWriter(sink, MESSAGES_SCHEMA) as writer:
            for batch in messages_reader(
                commitlog_dir,
                batch_rows=batch_rows,
                lenient=lenient,
                start_offset=start_offset,
                end_offset=end_offset,
            ):
                writer.write_batch(batch)
                rows += batch.num_rows
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return rows
