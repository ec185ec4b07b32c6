"""``rmqarrow.open``: the one front door, whatever the path holds."""

from __future__ import annotations

import os
from contextlib import ExitStack

from rmqarrow._paths import ObjectLocation, dataset_location, is_uri
from rmqarrow.converters.parquet.remote import local_snapshot
from rmqarrow.errors import InvalidValueError, StoreNotFoundError, UsageError
from rmqarrow.format.detect import DATASET_KINDS, Target, describe, detect, require_index_store
from rmqarrow.store._base import Store
from rmqarrow.store._dataset import DatasetStore, TieredDatasetStore
from rmqarrow.store._index import IndexStore
from rmqarrow.store._kind import PinnedDataset
from rmqarrow.store._rocksdb import RocksDBDatasetStore, RocksDBStore
from rmqarrow.store._tiered import TieredStore

__all__ = ["open_store"]


def open_store(
    path: str | os.PathLike[str],
    *,
    hash_slot_num: int | None = None,
    index_num: int | None = None,
    strict: bool = False,
    index: str | None = None,
    max_msgs_num_batch: int | None = None,
    max_query_days: int | None = None,
    as_of: object = None,
) -> Store:
    """Open what ``path`` holds, read-only, as a :class:`~rmqarrow.store.Store`.

    ``path`` may be one index file, a ``store/index`` directory, a broker store root (its
    ``index/``; its ``commitlog/`` where a method uses one), an exported Parquet dataset,
    a tiered ``IndexStoreFile`` (local or uploaded) or a folder of them, or an exported
    tiered dataset.  The geometry is fitted from the files as every command does, unless
    ``hash_slot_num``/``index_num`` are given.  ``strict`` refuses a store with a damaged
    file instead of skipping it.  Anything else is refused in one line naming what it is.
    An exported dataset of any kind (index files, tiered files, a RocksDB index) may be
    on object storage (``s3://BUCKET/PREFIX``): the store of its kind then reads a local
    copy of its pinned run, removed when the store is closed.

    A RocketMQ RocksDB message index (RIP-82: a RocksDB directory, or a broker store root
    holding ``rocksdbstore/``) opens as a :class:`~rmqarrow.store.RocksDBStore`, read-only
    without touching the directory; a store root holding both ``index/`` and
    ``rocksdbstore/`` opens its IndexFiles unless ``index="rocksdb"`` (``index="indexfile"``
    insists on the IndexFiles).  ``max_msgs_num_batch`` and ``max_query_days`` are the
    broker's ``maxMsgsNumBatch`` and ``maxRocksDBIndexQueryDays`` (defaults 64 and 7).

    ``as_of`` opens an older version of an exported dataset of Delta tables: a version
    (an int, as :meth:`~rmqarrow.store.DatasetStore.versions` lists them) or a time (a
    ``datetime``, or ISO 8601 text: the run that was current then); every method of the
    store, and every engine inside ``with store:``, then reads that version.  Refused
    for anything else, and for a version that does not exist or was vacuumed.
    """
    if index not in (None, "indexfile", "rocksdb"):
        raise UsageError(f"index must be 'indexfile' or 'rocksdb', got {index!r}")
    if not isinstance(path, str | os.PathLike):
        raise InvalidValueError(f"path must be a str or a path, got {type(path).__name__}")
    rocksdb_options = {
        k: v
        for k, v in (("max_msgs_num_batch", max_msgs_num_batch), ("max_query_days", max_query_days))
        if v is not None
    }
    if is_uri(path):
        where = dataset_location(path)  # any scheme but object storage's refused
        if isinstance(where, ObjectLocation):
            return _object_dataset(where, as_of, rocksdb_options, index)
    target = detect(path)
    if as_of is not None and target.kind not in (*DATASET_KINDS, "missing"):
        raise InvalidValueError(
            f"{target.path}: {describe(target)}; as_of reads an older version of an "
            "exported dataset of Delta tables"
        )
    if target.kind == "rocksdb_dataset":
        return RocksDBDatasetStore(target, **rocksdb_options, as_of=as_of)
    if target.kind == "rocksdb" or (index == "rocksdb" and target.rocksdb_dir is not None):
        if index == "indexfile":
            raise UsageError(f"{target.path}: {describe(target)}; it holds no IndexFiles")
        return RocksDBStore(target, **rocksdb_options)
    if index == "rocksdb":
        raise UsageError(
            f"{target.path}: no RocksDB message index here (expected a RocksDB "
            "directory or a broker store root holding rocksdbstore/); it is "
            f"{describe(target)}"
        )
    if target.kind == "missing":
        raise StoreNotFoundError(f"{target.path}: no such store directory, index file or dataset")
    if target.kind == "tiered":
        return TieredStore(target, hash_slot_num, index_num)
    if target.kind == "tiered_dataset":
        return TieredDatasetStore(target, None, None, as_of=as_of)
    if target.kind == "dataset":
        return DatasetStore(target, None, None, as_of=as_of)
    if target.is_index:
        return IndexStore(_index_target(target), hash_slot_num, index_num, strict=strict)
    if target.kind == "commitlog_dir":
        raise UsageError(f"{target.path}: {describe(target)}")
    raise UsageError(
        f"{target.path}: {describe(target)}; rmqarrow.open takes index files, a "
        "broker store root, an exported dataset or tiered index files"
    )


def _object_dataset(
    where: ObjectLocation,
    as_of: object = None,
    rocksdb_options: dict[str, int] | None = None,
    index: str | None = None,
) -> Store:
    """The dataset of any kind at ``where`` (object storage), over a local copy of its
    pinned run (of the run pinned ``as_of`` a version or time, when given): the store of
    its kind, as :func:`open_store` opens the same dataset on local disk, which reads the
    copy and writes (vacuum) to ``where``."""

    stack = ExitStack()
    try:
        local = stack.enter_context(local_snapshot(where, as_of))
        target = detect(local)
        store: PinnedDataset
        if index == "rocksdb" and target.kind != "rocksdb_dataset":
            raise UsageError(
                f"{where}: no RocksDB message index here (expected a RocksDB index's "
                f"dataset); it is {describe(target)}"
            )
        if target.kind == "tiered_dataset":
            store = TieredDatasetStore(target, None, None)
        elif target.kind == "rocksdb_dataset":
            store = RocksDBDatasetStore(target, **(rocksdb_options or {}))
        elif target.kind == "dataset":
            store = DatasetStore(target, None, None)
        else:
            raise UsageError(f"{where}: {describe(target)}; expected an exported dataset")
    except BaseException:
        stack.close()
        raise
    store._cleanup = stack.close
    store.remote = where
    return store


def _index_target(target: Target) -> Target:
    """The checked index target (a broker root needs a non-empty ``index/``)."""
    return require_index_store(target.path)
