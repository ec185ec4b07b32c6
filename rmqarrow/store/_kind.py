"""What every dataset store shares, of index files, tiered files or a RocksDB index:
versions (``as_of``), vacuum and conversion, all through the same functions
(:mod:`rmqarrow.converters.parquet.to_delta`, :mod:`rmqarrow.converters.delta.run`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from rmqarrow._paths import ObjectLocation
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.manifests import AnyManifest, KindManifest
from rmqarrow.converters.parquet.kind_read import kind_manifest
from rmqarrow.converters.parquet.manifest import (
    dataset_versions,
    delta_manifest,
    pinned_snapshot,
    snapshot_point,
)
from rmqarrow.converters.parquet.to_delta import convert_to_delta, vacuum_dataset
from rmqarrow.errors import InvalidValueError
from rmqarrow.format.detect import PIN_TABLES

__all__ = ["PinnedDataset", "kind_snapshot"]


def kind_snapshot(path: Path, fmt: str, as_of: object) -> KindManifest:
    """The manifest of the ``fmt`` dataset at ``path`` as of a version or time of it
    (refused for a dataset in the manifest layout, which keeps no versions)."""

    if not is_delta_dataset(path, PIN_TABLES[fmt]):
        raise InvalidValueError(
            f"{path}: a dataset in the manifest layout keeps no versions (as of {as_of}); "
            "convert it to Delta tables (`rmqarrow convert`) to keep them"
        )
    manifest = delta_manifest(path, snapshot_point(as_of), PIN_TABLES[fmt])
    with pinned_snapshot(path, manifest):
        return kind_manifest(path, fmt)  # its format, keys and counts checked


class PinnedDataset:
    """A mixin for a dataset store of the kind ``dataset_format``: opened ``as_of`` a
    version, every verb reads that snapshot (inside ``with``, every reader of the
    dataset does, the command line's engines too)."""

    dataset_format: str = ""
    path: Path
    #: where the dataset is when it is on object storage (``path`` is then the local copy
    #: of its pinned run that readers read; what writes goes to this location)
    remote: ObjectLocation | None = None

    if TYPE_CHECKING:  # the store's own (this mixin comes first in its bases)

        def _check_open(self) -> None: ...

    def _read_snapshot(self, as_of: object) -> AnyManifest:
        """The manifest of the version or time ``as_of`` (checked: format, keys, counts)."""
        return kind_snapshot(self.path, self.dataset_format, as_of)

    def _pin(self, as_of: object) -> None:
        self._tokens: list[contextlib.AbstractContextManager[None]] = []
        #: the snapshot every verb reads when opened ``as_of`` a version (read once, here),
        #: and the same as JSON holds it, which every reader of the dataset is pinned to
        self._manifest: AnyManifest | None = None
        self._snapshot: dict[str, Any] | None = None
        if as_of is not None:
            self._manifest = self._read_snapshot(as_of)
            self._snapshot = self._manifest.to_dict()

    @property
    def version(self) -> int | None:
        """The version this store reads when opened ``as_of`` one (None: each call reads
        the latest)."""
        return None if self._manifest is None else self._manifest.delta_version

    def _reading(self) -> contextlib.AbstractContextManager[None]:
        """Where a verb reads: the pinned snapshot, or the latest (read by the verb)."""

        if self._snapshot is None:
            return contextlib.nullcontext()
        return pinned_snapshot(self.path, self._snapshot)

    def __enter__(self) -> Self:
        # inside ``with``, every reader of this dataset reads the pinned snapshot (the
        # command line's engines too), not only this object's methods
        reading = self._reading()
        reading.__enter__()
        self._tokens.append(reading)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._tokens:
            self._tokens.pop().__exit__(None, None, None)
        super().__exit__(*exc_info)  # type: ignore[misc]

    def versions(self) -> list[dict[str, Any]]:
        """The versions a reader can open ``as_of``, oldest first (none for a dataset in
        the manifest layout: :func:`rmqarrow.converters.parquet.manifest.dataset_versions`)."""

        self._check_open()
        return dataset_versions(self.path)

    def convert_to_delta(self, *, wait: bool | float = False) -> bool:
        """Make this dataset's tables Delta tables in place (the parts committed as they
        are, the manifest's record pinned, ``_rmqarrow.json`` deleted last; killed, the
        next call finishes it); False when they already are
        (:func:`rmqarrow.converters.parquet.to_delta.convert_to_delta`)."""

        self._check_open()
        if self.remote is not None:
            return False  # a dataset on object storage is always in the Delta layout
        return convert_to_delta(self.path, wait=wait)

    def vacuum(
        self,
        retention_hours: int | None = None,
        *,
        dry_run: bool = False,
        wait: bool | float = False,
        force: bool = False,
    ) -> dict[str, list[str]]:
        """Delete the parts of this dataset of Delta tables that no run within
        ``retention_hours`` (None: a week; under an hour only with ``force``) reads;
        returns them by table (:func:`rmqarrow.converters.parquet.to_delta.vacuum_dataset`)."""

        self._check_open()
        where = self.remote if self.remote is not None else self.path
        return vacuum_dataset(where, retention_hours, dry_run=dry_run, wait=wait, force=force)
