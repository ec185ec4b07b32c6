"""All-or-nothing outputs: build in a hidden temporary sibling, rename into place.

A reader never sees a half-written dataset or store: the output appears by one
``rename`` once complete, and any exception (``KeyboardInterrupt`` included) removes the
temporary directory instead.  An existing output is replaced only with ``overwrite=True``,
and only after the new one is complete (old moved aside, new renamed in, old deleted).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from rmqarrow.errors import OutputExistsError

__all__ = ["atomic_dir", "move_files_no_replace"]


def _sibling(target: Path, tag: str) -> Path:
    return target.parent / f".{target.name}.{tag}-{uuid.uuid4().hex[:12]}"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield an empty temporary directory that becomes ``target`` when the block succeeds.

    Raises :class:`OutputExistsError` up front (and again at the end, should the target
    appear meanwhile) when ``target`` exists and ``overwrite`` is false.
    """
    out = Path(target).absolute()
    if out.exists() and not overwrite:
        raise OutputExistsError(
            f"{out}: already exists; pass overwrite (--overwrite) to replace it"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(out, "tmp")
    tmp.mkdir()
    try:
        yield tmp
        if out.exists() or out.is_symlink():
            if not overwrite:
                raise OutputExistsError(f"{out}: appeared while writing; nothing was replaced")
            old = _sibling(out, "old")
            os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)
                raise
            _remove(old)
        else:
            os.rename(tmp, out)
    except BaseException:
        _remove(tmp)
        raise


def move_files_no_replace(files: list[Path], target_dir: Path) -> list[Path]:
    """Put ``files`` into ``target_dir`` under their names, none replacing a file; all or none.

    Each file is hard-linked (which fails on an existing name, so there is no race; a plain
    rename after a check where links are unsupported); on any failure the names already
    placed are removed again.  The sources stay: the caller deletes its temporary dir.
    """
    placed: list[Path] = []
    try:
        for src in files:
            dst = target_dir / src.name
            try:
                os.link(src, dst)
            except FileExistsError:
                raise OutputExistsError(
                    f"{dst}: already exists; rmqarrow never overwrites native files"
                ) from None
            except OSError:
                if dst.exists() or dst.is_symlink():
                    raise OutputExistsError(
                        f"{dst}: already exists; rmqarrow never overwrites native files"
                    ) from None
                os.rename(src, dst)
            placed.append(dst)
    except BaseException:
        for dst in placed:
            with contextlib.suppress(FileNotFoundError):
                dst.unlink()
        raise
    return placed
