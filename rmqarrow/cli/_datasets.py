"""The dataset a command reads, held to one run: a copy of one on object storage, and
the snapshot every reader of a local one reads.

Apart from :mod:`rmqarrow.cli._output`, which the command line imports before it sizes
pyarrow's allocator (:func:`rmqarrow._memory.fit_allocators`): these load the dataset
readers, and so pyarrow, and only the commands that read datasets import them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import rmqarrow
import rmqarrow.converters
from rmqarrow._paths import is_uri
from rmqarrow.errors import RmqArrowError

__all__ = ["object_dataset_copy", "pinned_dataset"]


def object_dataset_copy(
    location: Any, as_of: str | None, stack: contextlib.ExitStack
) -> tuple[Any, str | None]:
    """``location`` and ``as_of`` as the commands below read them: a dataset on object
    storage is opened once (``rmqarrow.open``: a local copy of its pinned run, removed when
    ``stack`` closes) and becomes that copy, read as its latest (the copy's logs end at the
    version asked for), so every step reads the same run; anything else is as given."""
    if location is None or not is_uri(location):
        return location, as_of
    store = stack.enter_context(rmqarrow.open(location, as_of=as_of))
    copy = str(store.path)
    stack.enter_context(_named_as(copy, str(location)))
    return copy, None


@contextlib.contextmanager
def _named_as(copy: str, location: str) -> Iterator[None]:
    """An error of the block that names the local copy ``copy`` names ``location``, the
    dataset the user gave, instead (the copy is gone once the command ends)."""
    try:
        yield
    except RmqArrowError as exc:
        if copy not in str(exc):
            raise
        raise type(exc)(str(exc).replace(copy, location)) from None


def pinned_dataset(path: Any, as_of: str | None) -> Any:
    """A context in which every reader of the dataset ``path`` reads it ``as_of`` that
    version (the store opened so, entered), or its latest run read once (a command that
    reads it twice, as ``stats`` does, never pairs two runs); nothing for a store."""
    if path is None:
        return contextlib.nullcontext()
    if as_of is None:
        return rmqarrow.converters.one_snapshot(path)

    return rmqarrow.open(path, as_of=as_of)
