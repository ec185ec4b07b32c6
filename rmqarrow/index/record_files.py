"""Message records from a file (Parquet, CSV or TSV), in batches of the records schema.

``build --from FILE`` reads these.  Columns are matched by name and cast to
:data:`rmqarrow.format.records.RECORD_COLUMNS`' types; a missing optional column is null; a
value that does not convert is one :class:`~rmqarrow.errors.DatasetError` line naming the
file and the column.  :func:`validate_record_file` reads everything once without writing,
so an existing store is never half-appended from a bad file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from rmqarrow.errors import DatasetError, StoreNotFoundError, UsageError
from rmqarrow.format.records import RECORD_COLUMNS
from rmqarrow.index.build import check_record_values

__all__ = ["bad_record", "read_record_batches", "validate_record_file"]


def read_record_batches(source: Path, batch_rows: int) -> tuple[Any, int | None]:
    """Batches of message records from Parquet or CSV, and the row count when known."""
    if source.is_dir():
        # a CommitLog (or a broker root) is the usual directory given here by mistake
        raise UsageError(
            f"{source}: a directory, not a records file; records= expects a Parquet, "
            "CSV or TSV file of message records; for a CommitLog directory use "
            "commitlog="
        )
    if not source.is_file():
        raise StoreNotFoundError(f"{source}: no such file")
    types = {
        "topic": pa.string(),
        "keys": pa.string(),
        "uniq_key": pa.string(),
        "commit_log_offset": pa.int64(),
        "store_timestamp": pa.int64(),
        "sys_flag": pa.int32(),
    }
    if source.suffix.lower() in {".csv", ".tsv", ".txt"}:
        parse = pcsv.ParseOptions(delimiter="\t" if source.suffix.lower() == ".tsv" else ",")
        convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True)
        try:
            reader = pcsv.open_csv(
                source,
                parse_options=parse,
                convert_options=convert,
                read_options=pcsv.ReadOptions(block_size=64 << 20),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DatasetError(
                f"{source}: {' '.join(str(exc).split())[:300]}; expected a header line and "
                "commit_log_offset, store_timestamp (epoch ms) and sys_flag as integers"
            ) from None
        names, total, batches = reader.schema.names, None, iter(reader)
    else:
        try:
            pf = pq.ParquetFile(source)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DatasetError(f"{source}: neither CSV (by suffix) nor Parquet: {exc}") from None
        names, total = pf.schema_arrow.names, pf.metadata.num_rows
        batches = pf.iter_batches(batch_size=batch_rows)
    required = {"topic", "commit_log_offset", "store_timestamp"}
    missing = sorted(required - set(names))
    if missing:
        raise DatasetError(
            f"{source}: missing columns {missing}; expected {list(RECORD_COLUMNS)} "
            f"(keys, uniq_key and sys_flag optional), found {names}"
        )

    def checked() -> Any:
        """The source's batches; a value that does not parse is one line naming it."""
        try:
            yield from batches
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            text = " ".join(str(exc).split())[:300]
            raise DatasetError(
                f"{source}: a value does not fit its column ({text}); expected "
                "commit_log_offset and store_timestamp as integers (epoch ms), sys_flag as "
                "an integer"
            ) from None

    def normalise() -> Any:
        row = 1  # the input's record number of the batch's first row, as the check names it
        for batch in checked():
            cols = []
            for name in RECORD_COLUMNS:
                if name in batch.schema.names:
                    try:
                        cols.append(batch.column(name).cast(types[name]))
                    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
                        raise DatasetError(
                            f"{source}: column {name} holds {batch.schema.field(name).type} "
                            f"values that do not convert to {types[name]} "
                            f"({' '.join(str(exc).split())[:200]})"
                        ) from None
                else:
                    cols.append(pa.nulls(batch.num_rows, types[name]))
            whole = pa.RecordBatch.from_arrays(cols, names=list(RECORD_COLUMNS))
            check_record_values(whole, first_row=row, source=str(source))
            row += whole.num_rows
            for start in range(0, whole.num_rows, batch_rows):  # CSV blocks are larger
                yield whole.slice(start, batch_rows)

    return normalise(), total


def validate_record_file(source: Path, batch_rows: int) -> None:
    """Read every input record once, writing nothing: a bad value anywhere fails here,
    before a store that already exists is touched."""
    try:
        batches, _ = read_record_batches(source, batch_rows)
        for _ in batches:
            pass
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise bad_record(source, exc) from None
    except DatasetError as exc:
        raise DatasetError(f"{exc}; nothing was written") from None


def bad_record(source: Path, exc: Exception) -> DatasetError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatasetError(f"{source}: bad record: {first}; nothing was written")
