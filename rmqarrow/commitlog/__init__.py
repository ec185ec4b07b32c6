"""RocketMQ CommitLog files: read every record, write byte-identical files, resolve keys.

- :func:`iter_records` / :class:`CommitLogReader`: every message record with every field,
  bodies lazy; damage raises :class:`~rmqarrow.errors.CommitLogError` (or is reported with
  ``lenient=True``).
- :func:`index_records`: the vectorized Arrow path the index build reads.
- :class:`CommitLogWriter` / :func:`write_commitlog`: files as the broker writes them.
- :func:`resolve`: drop index hits whose message's topic or keys differ (hash collisions).

The byte layout is documented once, in :mod:`rmqarrow.commitlog._layout`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.commitlog._files import CommitLogFile, file_name, list_commitlog_files
    from rmqarrow.commitlog._layout import (
        MAGIC_BLANK,
        MAGIC_V1,
        MAGIC_V2,
        SYSFLAG_BORNHOST_V6,
        SYSFLAG_COMPRESSED,
        SYSFLAG_COMPRESSION_LZ4,
        SYSFLAG_COMPRESSION_MASK,
        SYSFLAG_COMPRESSION_ZLIB,
        SYSFLAG_COMPRESSION_ZSTD,
        SYSFLAG_MULTI_TAGS,
        SYSFLAG_STOREHOST_V6,
        SYSFLAG_TRANSACTION_COMMIT,
        SYSFLAG_TRANSACTION_MASK,
        SYSFLAG_TRANSACTION_NOT_TYPE,
        SYSFLAG_TRANSACTION_PREPARED,
        SYSFLAG_TRANSACTION_ROLLBACK,
        body_crc,
        decode_properties,
        encode_properties,
        split_keys,
    )
    from rmqarrow.commitlog.compression import (
        compress_body,
        compression_of,
        compression_sys_flag,
        inflate,
    )
    from rmqarrow.commitlog.index_arrow import (
        DEFAULT_BATCH_ROWS,
        INDEX_RECORDS_SCHEMA,
        index_record_batches,
        index_records,
    )
    from rmqarrow.commitlog.reader import (
        CommitLogProblem,
        CommitLogReader,
        CommitLogWarning,
        iter_records,
    )
    from rmqarrow.commitlog.record import Record
    from rmqarrow.commitlog.resolution import (
        ResolveMode,
        ResolveResult,
        format_message,
        java_split_keys,
        matches,
        mode_for,
        resolve,
    )
    from rmqarrow.commitlog.tail import bounded_reader, complete_end_offset
    from rmqarrow.commitlog.writer import (
        DEFAULT_MAPPED_FILE_SIZE,
        AppendMessageResult,
        CommitLogWriter,
        Message,
        encode_record,
        write_commitlog,
    )
    from rmqarrow.format.detect import require_commitlog

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_MAPPED_FILE_SIZE",
    "INDEX_RECORDS_SCHEMA",
    "MAGIC_BLANK",
    "MAGIC_V1",
    "MAGIC_V2",
    "SYSFLAG_BORNHOST_V6",
    "SYSFLAG_COMPRESSED",
    "SYSFLAG_COMPRESSION_LZ4",
    "SYSFLAG_COMPRESSION_MASK",
    "SYSFLAG_COMPRESSION_ZLIB",
    "SYSFLAG_COMPRESSION_ZSTD",
    "SYSFLAG_MULTI_TAGS",
    "SYSFLAG_STOREHOST_V6",
    "SYSFLAG_TRANSACTION_COMMIT",
    "SYSFLAG_TRANSACTION_MASK",
    "SYSFLAG_TRANSACTION_NOT_TYPE",
    "SYSFLAG_TRANSACTION_PREPARED",
    "SYSFLAG_TRANSACTION_ROLLBACK",
    "AppendMessageResult",
    "CommitLogFile",
    "CommitLogProblem",
    "CommitLogReader",
    "CommitLogWarning",
    "CommitLogWriter",
    "Message",
    "Record",
    "ResolveMode",
    "ResolveResult",
    "body_crc",
    "bounded_reader",
    "complete_end_offset",
    "compress_body",
    "compression_of",
    "compression_sys_flag",
    "decode_properties",
    "encode_properties",
    "encode_record",
    "file_name",
    "format_message",
    "index_record_batches",
    "index_records",
    "inflate",
    "iter_records",
    "java_split_keys",
    "list_commitlog_files",
    "matches",
    "mode_for",
    "require_commitlog",
    "resolve",
    "split_keys",
    "write_commitlog",
]

# names load when first used: importing the package (as the command line does) is cheap
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "require_commitlog": "rmqarrow.format.detect",
        "AppendMessageResult": "writer",
        "CommitLogFile": "_files",
        "CommitLogProblem": "reader",
        "CommitLogReader": "reader",
        "CommitLogWarning": "reader",
        "CommitLogWriter": "writer",
        "DEFAULT_BATCH_ROWS": "index_arrow",
        "DEFAULT_MAPPED_FILE_SIZE": "writer",
        "INDEX_RECORDS_SCHEMA": "index_arrow",
        "MAGIC_BLANK": "_layout",
        "MAGIC_V1": "_layout",
        "MAGIC_V2": "_layout",
        "Message": "writer",
        "Record": "record",
        "ResolveMode": "resolution",
        "ResolveResult": "resolution",
        "SYSFLAG_BORNHOST_V6": "_layout",
        "SYSFLAG_COMPRESSED": "_layout",
        "SYSFLAG_COMPRESSION_LZ4": "_layout",
        "SYSFLAG_COMPRESSION_MASK": "_layout",
        "SYSFLAG_COMPRESSION_ZLIB": "_layout",
        "SYSFLAG_COMPRESSION_ZSTD": "_layout",
        "SYSFLAG_MULTI_TAGS": "_layout",
        "SYSFLAG_STOREHOST_V6": "_layout",
        "SYSFLAG_TRANSACTION_COMMIT": "_layout",
        "SYSFLAG_TRANSACTION_MASK": "_layout",
        "SYSFLAG_TRANSACTION_NOT_TYPE": "_layout",
        "SYSFLAG_TRANSACTION_PREPARED": "_layout",
        "SYSFLAG_TRANSACTION_ROLLBACK": "_layout",
        "body_crc": "_layout",
        "bounded_reader": "tail",
        "complete_end_offset": "tail",
        "compress_body": "compression",
        "compression_of": "compression",
        "compression_sys_flag": "compression",
        "decode_properties": "_layout",
        "encode_properties": "_layout",
        "encode_record": "writer",
        "file_name": "_files",
        "format_message": "resolution",
        "index_record_batches": "index_arrow",
        "index_records": "index_arrow",
        "inflate": "compression",
        "iter_records": "reader",
        "java_split_keys": "resolution",
        "list_commitlog_files": "_files",
        "matches": "resolution",
        "mode_for": "resolution",
        "resolve": "resolution",
        "split_keys": "_layout",
        "write_commitlog": "writer",
    },
)
