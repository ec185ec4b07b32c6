"""What a location the user names may be: a local path, written once.

Native stores are mapped files and datasets are written with rename, ``flock`` and
directory ``fsync``; none of that exists on object storage.  A location such as
``s3://bucket/lake`` given to :class:`pathlib.Path` silently becomes the local folder
``./s3:/bucket/lake``, so every entry point that takes a location passes it through
:func:`local_path` first: ``file://`` URIs become their path, any other ``scheme://`` is
refused in one line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rmqarrow.errors import UnsupportedLocationError

__all__ = ["local_path"]

# RFC 3986's scheme, then "://"; RFC 8089 also allows "file:/PATH"
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://|^(file):(?=/)", re.IGNORECASE)


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
        f"{text}: {scheme}:// locations are not supported; rmqarrow reads and writes "
        "paths on this machine (copy the data to a local folder, or mount it)"
    )
