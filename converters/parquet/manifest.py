"""The dataset manifest, ``_rmqarrow.json``: what a dataset holds and where it came from.

It lets ``import`` check a dataset's completeness and ``verify`` tell whether a dataset is
stale against its store (a source file added, removed, resized or modified since).
Keys (all required unless marked optional)::

    format          "rmqarrow-dataset"
    layout_version  1 (see rmqarrow.converters.parquet.export)
    schema_version  rmqarrow.converters.schema.SCHEMA_VERSION
    writer          free text, e.g. "rmqarrow 0.1.0 (local)"
    created_at      ISO 8601 UTC
    source          {"path": absolute store dir or file,
                     "files": [{"file_name", "size", "mtime_ns", "hash_slot_num",
                                "index_num", "index_count"}, ...] oldest first}
    tables          {"files": {"rows": n}, "slots": {"rows": n}, "entries": {"rows": n}}
                    and optionally "messages": {"rows": n, "commitlog": absolute path}
                    when the dataset holds messages/ (rmqarrow.converters.arrow.messages; not part
                    of
                    the index, so import and verify ignore it)
    entries_order   optional: sort columns of each entries part, e.g. ["slot", "position"]
    parquet         optional: writer settings (free form)
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from rmqarrow.converters.schema import SCHEMA_VERSION

from rmqarrow.errors import DatasetError

__all__ = [
    "FORMAT",
    "LAYOUT_VERSION",
    "MANIFEST_NAME",
    "new_manifest",
    "read_manifest",
    "source_file_info",
    "stale_reasons",
    "write_manifest",
]

MANIFEST_NAME = "_rmqarrow.json"
FORMAT = "rmqarrow-dataset"
LAYOUT_VERSION = 1


def source_file_info(path: Path, hash_slot_num: int, index_num: int, index_count: int) -> dict[
    str, Any
]:
    st = path.stat()
    return {
        "file_name": path.name,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "hash_slot_num": hash_slot_num,
        "index_num": index_num,
        "index_count": index_count,
    }


def new_manifest(
    source: str | os.PathLike[str],
    files: list[dict[str, Any]],
    rows: dict[str, int],
    *,
    writer: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A manifest for a dataset of ``source`` (a store dir or one file)."""
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "layout_version": LAYOUT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "writer": writer,
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "source": {"path": str(Path(source).absolute()), "files": files},
        "tables": {t: {"rows": int(rows[t])} for t in ("files", "slots", "entries")},
    }
    manifest.update(extra or {})
    return manifest


def write_manifest(dataset_dir: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    (dataset_dir / MANIFEST_NAME).write_text(text, encoding="utf-8")


def read_manifest(dataset_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a dataset; :class:`DatasetError` when missing, unreadable or foreign."""
    path = Path(dataset_dir) / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: missing; not an rmqarrow dataset (or incomplete)") from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DatasetError(f"{path}: format is not {FORMAT!r}")
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise DatasetError(
            f"{path}: schema_version {manifest.get('schema_version')!r}, "
            f"expected {SCHEMA_VERSION!r}"
        )
    if manifest.get("layout_version") != LAYOUT_VERSION:
        raise DatasetError(
            f"{path}: layout_version {manifest.get('layout_version')!r}, expected {LAYOUT_VERSION}"
        )
    try:
        for f in manifest["source"]["files"]:
            str(f["file_name"])
        for t in ("files", "slots", "entries"):
            int(manifest["tables"][t]["rows"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{path}: malformed manifest ({exc!r} missing or wrong)") from None
    return manifest


def stale_reasons(
    dataset_dir: str | os.PathLike[str], store: str | os.PathLike[str] | None = None
) -> list[str]:
    """Why a dataset no longer matches its store (empty list: up to date).

    ``store`` defaults to the manifest's source path.  Compares the set of file names and
    each file's size and modification time with what the manifest recorded at export.
    """
    from rmqarrow.format.naming import list_index_files

    manifest = read_manifest(dataset_dir)
    src = Path(store) if store is not None else Path(manifest["source"]["path"])
    recorded = {f["file_name"]: f for f in manifest["source"]["files"]}
    if src.is_file():
        current = {src.name: src}
    elif src.is_dir():
        current = {p.name: p for p in list_index_files(src)}
    else:
        return [f"{src}: source no longer exists"]
    added = sorted(set(current) - set(recorded))
    gone = sorted(set(recorded) - set(current))
    reasons = [f"{n}: in the store, not in the dataset" for n in added]
    reasons += [f"{n}: in the dataset, gone from the store" for n in gone]
    for name in sorted(set(current) & set(recorded)):
        st = current[name].stat()
        rec = recorded[name]
        if st.st_size != rec["size"]:
            reasons.append(f"{name}: size {st.st_size}, dataset has {rec['size']}")
        elif st.st_mtime_ns != rec["mtime_ns"]:
            reasons.append(f"{name}: modified since export (mtime_ns {st.st_mtime_ns}, "
                           f"dataset has {rec['mtime_ns']})")
    return reasons
