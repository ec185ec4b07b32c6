"""``rmqarrow.open``: the one front door, whatever the path holds."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import replace

from rmqarrow._formats import FormatPlugin, format_plugins, load, plugin_for_kind, plugin_named
from rmqarrow._paths import ObjectLocation, dataset_location, is_uri
from rmqarrow._vocab import Format, Kind, Source
from rmqarrow.converters.parquet.remote import local_snapshot
from rmqarrow.errors import InvalidValueError, StoreNotFoundError, UsageError
from rmqarrow.format.detect import Target, describe, detect, instead_of
from rmqarrow.format.layout import Geometry, GeometryHint, geometry_hint
from rmqarrow.store._base import OpenOptions, Store
from rmqarrow.store._kind import PinnedDataset

__all__ = ["open_store"]


def open_store(
    path: str | os.PathLike[str],
    *,
    geometry: Geometry | GeometryHint | None = None,
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
    given: ``geometry`` (a :class:`~rmqarrow.GeometryHint`, or a complete
    :class:`~rmqarrow.Geometry`), or ``hash_slot_num``/``index_num`` (not both forms).
    ``strict`` refuses a store with a damaged file instead of skipping it.  Anything else
    is refused in one line naming what it is.
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
    options = OpenOptions(
        geometry=geometry_hint(geometry, hash_slot_num, index_num),
        strict=strict,
        as_of=as_of,
        rocksdb={
            k: v
            for k, v in (
                ("max_msgs_num_batch", max_msgs_num_batch),
                ("max_query_days", max_query_days),
            )
            if v is not None
        },
    )
    if is_uri(path):
        where = dataset_location(path)  # any scheme but object storage's refused
        if isinstance(where, ObjectLocation):
            return _object_dataset(where, options, index)
    target = detect(path)
    plugin = plugin_for_kind(target.kind)
    source = None if plugin is None else plugin.kinds[target.kind]
    if as_of is not None and source is not Source.DATASET and target.kind != Kind.MISSING:
        raise InvalidValueError(
            f"{target.path}: {describe(target)}; as_of reads an older version of an "
            "exported dataset of Delta tables"
        )
    if index == "rocksdb" and target.kind != Kind.ROCKSDB_DATASET:
        if target.rocksdb_dir is None:
            raise UsageError(
                f"{target.path}: no RocksDB message index here (expected a RocksDB "
                "directory or a broker store root holding rocksdbstore/); it is "
                f"{describe(target)}"
            )
        # a broker root holding both indexes: its RocksDB index, as asked
        _check_options(Format.ROCKSDB, target, options)
        return _store_class(plugin_named(Format.ROCKSDB), Kind.ROCKSDB).opened(target, options)
    if target.kind == Kind.ROCKSDB and index == "indexfile":
        raise UsageError(f"{target.path}: {describe(target)}; it holds no IndexFiles")
    if target.kind == Kind.MISSING:
        raise StoreNotFoundError(f"{target.path}: no such store directory, index file or dataset")
    if plugin is None:
        if target.kind == Kind.COMMITLOG_DIR or instead_of(target):
            raise UsageError(f"{target.path}: {describe(target)}")
        formats = [p.description for p in format_plugins()]
        raise UsageError(
            f"{target.path}: {describe(target)}; rmqarrow.open takes a broker store root, "
            f"or the files or exported dataset of {', '.join(formats[:-1])} or {formats[-1]}"
        )
    _check_options(plugin.name, target, options)
    return _store_class(plugin, target.kind).opened(target, options)


def _check_options(fmt: str, target: Target, options: OpenOptions) -> None:
    """Refuse the options the format at ``target`` has no use for: each kind would
    otherwise drop them silently, and an operator would take the answer as theirs."""
    if fmt == Format.ROCKSDB:
        # a broker root holding both indexes is read through its RocksDB directory here
        db = target.rocksdb_dir
        what = f"{target.path} is {target.detail}" if db is None else f"{db} is a RocksDB index"
        for name in ("hash_slot_num", "index_num"):
            value = getattr(options.geometry, name)
            if value is not None:
                raise UsageError(
                    f"{name}={value} is for IndexFiles and tiered files; {what}, which has "
                    "no hash slots: leave it out"
                )
    elif options.rocksdb:
        name, value = next(iter(options.rocksdb.items()))
        fix = (
            "add index=rocksdb to read its RocksDB index"
            if target.rocksdb_dir is not None
            else "leave it out"
        )
        raise UsageError(
            f"{name}={value} is for the RocksDB message index; {target.path} is "
            f"{target.detail}: {fix}"
        )


def _store_class(plugin: FormatPlugin, kind: str) -> type[Store]:
    """The store class ``plugin`` opens a path of ``kind`` with."""
    cls = load(plugin.store_path(kind))
    if not (isinstance(cls, type) and issubclass(cls, Store)):
        raise UsageError(f"format '{plugin.name}': {plugin.store_path(kind)} is not a Store class")
    return cls


def _object_dataset(where: ObjectLocation, options: OpenOptions, index: str | None = None) -> Store:
    """The dataset of any kind at ``where`` (object storage), over a local copy of its
    pinned run (of the run pinned ``as_of`` a version or time, when given): the store of
    its kind, as :func:`open_store` opens the same dataset on local disk, which reads the
    copy and writes (vacuum) to ``where``."""

    stack = ExitStack()
    try:
        local = stack.enter_context(local_snapshot(where, options.as_of))
        target = detect(local)
        if index == "rocksdb" and target.kind != Kind.ROCKSDB_DATASET:
            raise UsageError(
                f"{where}: no RocksDB message index here (expected a RocksDB index's "
                f"dataset); it is {describe(target)}"
            )
        plugin = plugin_for_kind(target.kind)
        if plugin is None or plugin.kinds[target.kind] is not Source.DATASET:
            raise UsageError(f"{where}: {describe(target)}; expected an exported dataset")
        # the copy is the pinned run itself: no version to pin again
        store = _store_class(plugin, target.kind).opened(target, replace(options, as_of=None))
    except BaseException:
        stack.close()
        raise
    store._cleanup = stack.close
    if not isinstance(store, PinnedDataset):
        store.close()
        raise UsageError(f"{where}: format '{plugin.name}' keeps no dataset on object storage")
    store.remote = where
    return store
