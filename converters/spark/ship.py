"""Ship rmqarrow to a cluster's executors: one zip of the installed package, built once.

On a cluster the executors' Python must import rmqarrow (every task decodes files with
it).  Rather than asking operators to install it on every worker, the driver zips the
package it runs (``rmqarrow/`` with ``rmqarrow/converters/``, whatever the install
layout, editable or not) and adds the zip with ``SparkContext.addPyFile``: Spark copies
it to every executor and puts it first on the Python workers' ``sys.path``, so executors
run exactly the driver's version.  The zip is cached under
``$XDG_CACHE_HOME/rmqarrow/spark`` (else ``~/.cache``), keyed by version and by every
source file's size and mtime, so it is built once per code change.  The executors still
need rmqarrow's dependencies (numpy, pyarrow; numba optional) in their Python.

Turned off by ``spark.rmqarrow.ship=false`` (Spark conf), ``RMQARROW_SPARK_SHIP=0`` or
``get_spark(..., ship=False)``; local masters never ship (the driver's Python is used).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import zipfile
from pathlib import Path

from rmqarrow._version import __version__

__all__ = ["SHIP_CONF", "SHIP_ENV", "package_zip", "ship_enabled"]

SHIP_CONF = "spark.rmqarrow.ship"
SHIP_ENV = "RMQARROW_SPARK_SHIP"
_FALSE = {"0", "false", "no", "off"}


def ship_enabled(conf_value: str | None, explicit: bool | None = None) -> bool:
    """Whether to ship: ``explicit`` wins, then the Spark conf, then the environment."""
    if explicit is not None:
        return explicit
    for raw in (conf_value, os.environ.get(SHIP_ENV)):
        if raw is not None and raw != "":
            return raw.strip().lower() not in _FALSE
    return True


def _locations(package: str) -> list[str]:
    spec = importlib.util.find_spec(package)
    return list(spec.submodule_search_locations or []) if spec is not None else []


def _sources() -> list[tuple[str, Path]]:
    """``(name in the zip, file)`` for every file of the installed package."""
    # the package's folders as installed (editable: converters/ lives outside rmqarrow/)
    roots = [("rmqarrow", Path(p)) for p in _locations("rmqarrow")]
    conv = [Path(p) for p in _locations("rmqarrow.converters")]
    roots += [
        ("rmqarrow/converters", p)
        for p in conv
        if not any(p.resolve().is_relative_to(r.resolve()) for _, r in roots)
    ]
    out: list[tuple[str, Path]] = []
    for prefix, root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                out.append((f"{prefix}/{path.relative_to(root).as_posix()}", path))
    return out


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rmqarrow" / "spark"


def package_zip(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The zip of the running rmqarrow (built now if the cache has none for this code)."""
    sources = _sources()
    digest = hashlib.sha256()
    for name, path in sources:
        st = path.stat()
        digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    directory = Path(cache_dir) if cache_dir is not None else _cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"rmqarrow-{__version__}-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, path in sources:
            zf.write(path, name)
    os.replace(tmp, target)
    return target
