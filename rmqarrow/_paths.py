"""What a location the user names may be: a local path, or a dataset on object storage,
written once.

Native stores are mapped files and local datasets are published with rename, ``flock``
and directory ``fsync``; none of that exists on object storage (datasets there are
committed by delta-rs's conditional put).  A
location such as ``s3://bucket/lake`` given to :class:`pathlib.Path` silently becomes the
local folder ``./s3:/bucket/lake``, so every entry point that takes a location passes it
through :func:`local_path` first: ``file://`` URIs become their path, any other
``scheme://`` is refused in one line.

A dataset may also be an :class:`ObjectLocation` (:func:`dataset_location`): a URI of one
of :data:`OBJECT_SCHEMES`, read and written through pyarrow's file system for it
(:meth:`pyarrow.fs.FileSystem.from_uri`) and committed through delta-rs; both take their
credentials, region and endpoint from the usual settings of the store (for S3: the
``AWS_*`` environment variables, ``~/.aws/config`` and ``~/.aws/credentials``), so a
dataset on object storage is always in the Delta layout, whose commits need no rename.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from rmqarrow.errors import ObjectStorageError, UnsupportedLocationError

if TYPE_CHECKING:
    from pyarrow import fs as pafs

__all__ = [
    "OBJECT_SCHEMES",
    "DatasetLocation",
    "ObjectLocation",
    "dataset_location",
    "is_uri",
    "local_path",
    "storage_errors",
]

#: The URI schemes a dataset may have besides local paths: object stores both pyarrow's
#: file systems and delta-rs (which commits the dataset's tables) reach, and the tests
#: run against a real server of (S3 only: Google's and Azure's clients also reach both,
#: untested, and wait minutes on a network that cannot reach them).
OBJECT_SCHEMES = ("s3",)

# RFC 3986's scheme, then "://"; RFC 8089 also allows "file:/PATH"
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://|^(file):(?=/)", re.IGNORECASE)


def is_uri(location: object) -> bool:
    """Whether ``location`` names object storage (an :class:`ObjectLocation`, or text
    with a ``scheme://`` other than ``file://``)."""
    if isinstance(location, ObjectLocation):
        return True
    if not isinstance(location, str):
        return False
    match = _URI.match(location)
    return match is not None and (match.group(1) or match.group(2)).lower() != "file"


def local_path(location: str | os.PathLike[str]) -> Path:
    """``location`` as a local :class:`~pathlib.Path`.

    A ``file://`` URI gives its path; any other ``scheme://`` raises
    :class:`~rmqarrow.errors.UnsupportedLocationError` rather than becoming a local folder
    named after the scheme.
    """
    text = os.fspath(location)
    match = _URI.match(text)
    if match is None:
        return Path(text)
    scheme = (match.group(1) or match.group(2)).lower()
    if scheme == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise UnsupportedLocationError(
                f"{text}: a file:// URI on host {parts.netloc!r}; expected file:///PATH "
                "(a path on this machine)"
            )
        return Path(unquote(parts.path))
    raise UnsupportedLocationError(
        f"{text}: {scheme}:// locations are not supported here; rmqarrow reads and writes "
        "paths on this machine (copy the data to a local folder, or mount it)"
        + (
            "; a dataset on object storage is read by import, sql, stats, info, query, "
            "verify --dataset and rmqarrow.open, and written by export and vacuum"
            if scheme in OBJECT_SCHEMES
            else ""
        )
    )


@dataclass(frozen=True, order=True)
class ObjectLocation:
    """A folder or file on object storage, named by its URI (``s3://bucket/key``, no
    trailing ``/``): the few :class:`pathlib.Path` operations a dataset reader and its
    writer's commit need, done through pyarrow's file system for the URI."""

    uri: str

    def __str__(self) -> str:
        return self.uri

    def __truediv__(self, name: str | os.PathLike[str]) -> ObjectLocation:
        tail = os.fspath(name).strip("/")
        return ObjectLocation(f"{self.uri}/{tail}") if tail else self

    @property
    def name(self) -> str:
        """The last segment of the key (a table's or part's name)."""
        return self.uri.rsplit("/", 1)[-1]

    @property
    def parent(self) -> ObjectLocation:
        """The folder holding this one (the bucket's root stays itself)."""
        head, _, _ = self.uri.rpartition("/")
        return self if head.endswith(":/") else ObjectLocation(head)

    def absolute(self) -> ObjectLocation:
        """Itself: a URI is absolute."""
        return self

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """pyarrow's file system for the URI and the path inside it."""
        return _filesystem(self.uri)

    def _info(self) -> Any:
        fs, path = self.filesystem()
        with storage_errors(self):
            return fs.get_file_info(path)

    def is_dir(self) -> bool:
        """Whether any object lies under this prefix (object storage has no folders)."""
        return bool(self._info().type == _pyarrow_fs().FileType.Directory)

    def is_file(self) -> bool:
        """Whether an object has exactly this key."""
        return bool(self._info().type == _pyarrow_fs().FileType.File)

    def exists(self) -> bool:
        """Whether an object or a prefix of objects is here."""
        return bool(self._info().type != _pyarrow_fs().FileType.NotFound)

    def iterdir(self) -> Iterator[ObjectLocation]:
        """What lies directly under this prefix (objects and prefixes)."""
        fs, path = self.filesystem()
        with storage_errors(self):
            infos = fs.get_file_info(_pyarrow_fs().FileSelector(path, allow_not_found=True))
        for info in sorted(infos, key=lambda i: str(i.path)):
            yield self / str(info.base_name)

    def read_bytes(self) -> bytes:
        """The object's bytes (:class:`FileNotFoundError` when there is none)."""
        fs, path = self.filesystem()
        with storage_errors(self, missing_ok=True), fs.open_input_stream(path) as f:
            return bytes(f.read())

    def read_text(self, encoding: str = "utf-8") -> str:
        """The object's text."""
        return self.read_bytes().decode(encoding)

    def size(self) -> int:
        """The object's size in bytes."""
        return int(self._info().size)

    def mtime_ns(self) -> int:
        """When the object was written (ns since the epoch; 0 when the store says not)."""
        mtime = self._info().mtime_ns
        return int(mtime) if mtime is not None else 0


@contextmanager
def storage_errors(where: object, *, missing_ok: bool = False) -> Iterator[None]:
    """An :class:`OSError` of object storage (no such bucket, access denied, endpoint
    unreachable) as :class:`~rmqarrow.errors.ObjectStorageError`, one line naming
    ``where`` (``missing_ok``: :class:`FileNotFoundError` passes as it is)."""
    try:
        yield
    except ObjectStorageError:
        raise
    except FileNotFoundError:
        if missing_ok:
            raise
        raise ObjectStorageError(f"{where}: not found on object storage") from None
    except OSError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ObjectStorageError(
            f"{where}: object storage refused or failed ({reason}); check the bucket, the "
            "credentials and the endpoint (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID)"
        ) from None


#: A dataset's location: a local folder or one on object storage.
DatasetLocation = Path | ObjectLocation


def _pyarrow_fs() -> Any:
    """``pyarrow.fs``, imported on first use: the command line imports this module before
    it sizes pyarrow's allocator (:func:`rmqarrow._memory.fit_allocators`, read once when
    pyarrow starts), so pyarrow must not load with it.  The one lazy import of the module."""
    from pyarrow import fs as pafs

    return pafs


def _filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    try:
        fs, path = _pyarrow_fs().FileSystem.from_uri(uri)
    except (ValueError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UnsupportedLocationError(
            f"{uri}: cannot reach this location ({reason}); check the URI and the store's "
            "settings (for S3: AWS_ENDPOINT_URL, AWS_REGION, credentials)"
        ) from None
    return fs, str(path)


def dataset_location(location: str | os.PathLike[str] | ObjectLocation) -> DatasetLocation:
    """Where a Parquet dataset is: a local :class:`~pathlib.Path` (as :func:`local_path`
    gives it) or an :class:`ObjectLocation` for a URI of :data:`OBJECT_SCHEMES` (a bucket
    and a key prefix; the trailing ``/`` dropped).  Any other ``scheme://`` raises
    :class:`~rmqarrow.errors.UnsupportedLocationError`."""
    if isinstance(location, ObjectLocation):
        return location
    text = os.fspath(location)
    match = _URI.match(text)
    scheme = "" if match is None else (match.group(1) or match.group(2)).lower()
    if scheme not in OBJECT_SCHEMES:
        if scheme and scheme != "file":
            raise UnsupportedLocationError(
                f"{text}: {scheme}:// locations are not supported; a dataset is a local "
                f"path or a URI of {', '.join(s + '://' for s in OBJECT_SCHEMES)}"
            )
        return local_path(text)
    parts = urlsplit(text)
    if not parts.netloc or parts.query or parts.fragment:
        raise UnsupportedLocationError(
            f"{text}: expected {scheme}://BUCKET/PREFIX (a bucket, a key prefix, no ?query "
            "or #fragment)"
        )
    key = parts.path.strip("/")
    if any(seg in ("", ".", "..") for seg in key.split("/")) and key:
        raise UnsupportedLocationError(
            f"{text}: the key prefix {key!r} has an empty, . or .. segment; name it plainly"
        )
    return ObjectLocation(f"{scheme}://{parts.netloc}" + (f"/{key}" if key else ""))
