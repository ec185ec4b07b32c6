"""The exception hierarchy: one root, each leaf also a matching built-in.

Every error rmqarrow raises derives from :class:`RmqArrowError`, so callers can catch
everything from this package in one clause, while code that already expects
``ValueError`` or ``FileExistsError`` keeps working.  Messages name the file or the
input at fault and show what was expected next to what was found.
"""

from __future__ import annotations

__all__ = [
    "BrokerRunningError",
    "CheckpointError",
    "ClosedIndexError",
    "CommitConflictError",
    "CommitLogError",
    "CorruptIndexError",
    "DataLossError",
    "DatasetError",
    "DiskFullError",
    "EngineError",
    "EngineUnavailableError",
    "GeometryError",
    "InvalidKeyError",
    "InvalidValueError",
    "LockFileError",
    "MergeConflictError",
    "ObjectStorageError",
    "OutputExistsError",
    "ReadOnlyIndexError",
    "RmqArrowError",
    "StoreChangedError",
    "StoreLockedError",
    "StoreNotFoundError",
    "StoreWentBackwardsError",
    "TieredReadError",
    "UnsupportedLocationError",
    "UnsupportedOperationError",
    "UsageError",
    "WriteRefusedError",
]


class RmqArrowError(Exception):
    """Root of every error raised by rmqarrow."""


class CorruptIndexError(RmqArrowError, ValueError):
    """An index file is truncated or its header holds impossible values."""


class GeometryError(CorruptIndexError):
    """A file's size does not match the hash-slot and entry counts it was opened with."""


class InvalidKeyError(RmqArrowError, TypeError):
    """A key is not a ``str`` (``None``, ``bytes``, numbers are refused)."""


class OutputExistsError(RmqArrowError, FileExistsError):
    """Writing would replace an existing file or dataset; rmqarrow never does that silently."""


class StoreNotFoundError(RmqArrowError, FileNotFoundError):
    """A store directory, index file or dataset does not exist."""


class ReadOnlyIndexError(RmqArrowError, PermissionError):
    """A write was attempted on an index file opened read-only."""


class ClosedIndexError(RmqArrowError, ValueError):
    """An index file or service was used after it was closed."""


class DatasetError(RmqArrowError, ValueError):
    """An Arrow/Parquet dataset is incomplete or inconsistent with the native format."""


class CommitLogError(RmqArrowError, ValueError):
    """A CommitLog record is damaged; the message gives the file and physical offset."""


class EngineUnavailableError(RmqArrowError, ImportError):
    """An optional engine (pyspark, Java, numba, ...) is missing; the message names the fix."""


class InvalidValueError(RmqArrowError, ValueError):
    """An argument is out of range (an offset outside int64, a negative count, ...)."""


class UsageError(InvalidValueError):
    """Options that do not go together, or a command used on the wrong kind of input.

    The command line exits with status 2 for these (1 for every other error).
    """


class EngineError(RmqArrowError, RuntimeError):
    """An engine (DuckDB, Spark) failed to run a statement; the message quotes its error."""


class TieredReadError(RmqArrowError, ValueError):
    """A tiered index segment read falls outside it, where RocketMQ's query fails too."""


class ObjectStorageError(RmqArrowError, OSError):
    """Object storage (S3) refused or failed a request: no such bucket, access denied, an
    endpoint that does not answer; the message names the location and the settings."""


class DiskFullError(RmqArrowError, OSError):
    """No space left for a file rmqarrow reserves before writing (ENOSPC, quota)."""


class StoreLockedError(RmqArrowError, BlockingIOError):
    """Another process is writing the store, dataset or checkpoint; the message names it
    (pid, host, command, since when).  Readers never get this."""


class CommitConflictError(StoreLockedError):
    """Another writer committed to a dataset table after this run read it: nothing this
    run commits is read through the dataset's pin; run it again."""


class BrokerRunningError(StoreLockedError):
    """A RocketMQ broker is running on the store a write was aimed at (it holds
    ``STORE/lock``), or ``STORE/abort`` is there and whether one runs cannot be told; the
    message names the store, the lock and the holder's pid.  Readers never get this."""


class LockFileError(RmqArrowError, PermissionError):
    """The writer lock file next to an output cannot be created (permissions, read-only)."""


class MergeConflictError(RmqArrowError, ValueError):
    """Importing into a non-empty store would overlap what it holds (file names, CommitLog
    offsets) or mix geometries; nothing was written."""


class CheckpointError(RmqArrowError, ValueError):
    """A file given as RocketMQ's ``store/checkpoint`` is not one (size or contents)."""


class UnsupportedLocationError(UsageError):
    """A location rmqarrow cannot read or write (``s3://...`` and other URIs but
    ``file://``): refused rather than taken for a local folder named after its scheme."""


class UnsupportedOperationError(UsageError):
    """What an opened store cannot do for its kind (export an exported dataset, look keys up
    natively in Parquet, ...); the message names the kind and what to use instead."""


class MemoryLimitError(RmqArrowError, MemoryError):
    """Memory ran out under the process's limit (``ulimit -v``, a container's memory);
    the message names the limit, what was running and what to do."""


class StoreChangedError(DatasetError):
    """An incremental export found a store file shorter than the dataset's copy, or
    replaced by another (its header's identity differs): the store went backwards."""


class StoreWentBackwardsError(RmqArrowError, ValueError):
    """A reader that follows a store (a stream's checkpoint) is ahead of it: a file shrank,
    was replaced, or the CommitLog lost data already read; start over from the store."""


class WriteRefusedError(UsageError):
    """A statement that may write (a file, a database, an extension) was given to a reader
    that runs only statements that read; the message names the statement."""


class DataLossError(RmqArrowError, ValueError):
    """A stream's next rows are gone from the store (the broker expired the files before
    the query read them); the message says what was lost and how to continue without it."""
