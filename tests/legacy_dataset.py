"""Datasets of the older manifest layout (``_rmqarrow.json`` beside plain Parquet folders).

rmqarrow no longer writes that layout, but still reads it and converts it; the tests that
need one make it from a Delta export: the same parts, listed by the manifest instead of
Delta logs, as that layout's writer listed them.  ``tests/legacy/`` holds one the writer
itself wrote, and ``tests/converters/parquet/test_legacy_dataset.py`` checks this helper
against it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow.format.detect import MANIFEST_NAME

__all__ = ["legacy_export", "legacy_layout"]


def legacy_layout(ds: Path) -> Path:
    """Turn the Delta dataset ``ds`` into one of the manifest layout, in place."""
    manifest = read_manifest(ds)
    manifest.pop("delta", None)
    for log in sorted(ds.glob("*/_delta_log")):
        shutil.rmtree(log)
    text = json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    (ds / MANIFEST_NAME).write_text(text, encoding="utf-8")
    return ds


def legacy_export(
    store: str | os.PathLike[str], out: str | os.PathLike[str], **options: Any
) -> dict[str, Any]:
    """Export ``store`` to ``out`` in the manifest layout; its manifest."""
    export_store(store, out, **options)
    legacy_layout(Path(out))
    return read_manifest(out)
