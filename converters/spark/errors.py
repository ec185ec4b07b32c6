"""Spark's executor and JVM errors as one clear rmqarrow error.

A task that fails on an executor reaches the driver as a ``Py4JJavaError`` or a
``pyspark.errors`` exception whose text holds a Java stack, Spark's "Job aborted ... Lost
task ... (HOST executor ID)" line and the Python traceback from the worker.
:func:`translate` keeps what a user needs: the first line of Spark's error, the final
Python exception (an rmqarrow error keeps its class), which executor on which host, and
where its log is.  A file missing on an executor (a path only the driver sees) says that
the path must be visible at the same absolute path on every executor; a missing rmqarrow
module says how to ship or install it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmqarrow import errors
from rmqarrow.errors import EngineError, EngineUnavailableError, RmqArrowError, StoreNotFoundError

__all__ = ["is_spark_error", "spark_errors", "translate"]

_LOST = re.compile(r"Lost task \S+ in stage \S+ \(TID \d+\) \((\S+) executor ([^)]+)\)")
_PY_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): ?(.*)$")
_PATH = re.compile(r"(/[^\s:'\"]+)")
_APP = re.compile(r"\b(app-\d{14}-\d{4})\b")


def is_spark_error(exc: BaseException) -> bool:
    """True for exceptions raised by pyspark or py4j (not rmqarrow's own)."""
    if isinstance(exc, RmqArrowError):
        return False
    module = type(exc).__module__ or ""
    return module.startswith(("pyspark", "py4j"))


def _final_python_exception(text: str) -> tuple[str, str] | None:
    """The last ``Name: message`` line of the first Python traceback in ``text``."""
    start = text.find("Traceback (most recent call last)")
    if start < 0:
        return None
    found: tuple[str, str] | None = None
    for line in text[start:].splitlines()[1:]:
        if line.startswith(("\tat ", "\t... ", "Driver stacktrace")) or "JVM stacktrace" in line:
            break
        m = _PY_EXC.match(line.strip()) if not line.startswith(" ") else None
        if m:
            found = (m.group(1), m.group(2).strip())
    return found


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("An error occurred while calling", "Traceback")):
            return line[:300]
    return text.strip()[:300]


def translate(exc: BaseException, app_id: str | None = None) -> RmqArrowError:
    """One rmqarrow error (one line) for a pyspark/py4j exception."""
    text = str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None and not text.strip():
        text = str(java)
    lost = _LOST.search(text)
    where = ""
    if lost:
        host, executor = lost.group(1), lost.group(2)
        app = app_id or (m.group(1) if (m := _APP.search(text)) else "<app-id>")
        where = (
            f" (on executor {executor} at {host}; its log: {app}/{executor}/stderr in that "
            f"worker's work directory)"
        )
    py = _final_python_exception(text)
    if py is None:
        return EngineError(f"Spark: {_first_line(text)}{where}")
    name, message = py
    short = name.rsplit(".", 1)[-1]
    cls = getattr(errors, short, None)
    missing = short in ("FileNotFoundError", "NotADirectoryError") or (
        isinstance(cls, type) and issubclass(cls, StoreNotFoundError)
    )
    if missing:
        seen = any(Path(p).exists() for p in _PATH.findall(message))
        hint = (
            ": the driver sees this path but Spark's Python workers do not"
            if seen
            else ": the path is not there for Spark's Python workers"
        )
        return StoreNotFoundError(
            f"{message}{where}{hint}; stores and outputs must be visible at the same "
            f"absolute path on the driver and every executor (a shared file system)"
        )
    if isinstance(cls, type) and issubclass(cls, RmqArrowError):
        return cls(f"{message}{where}")
    if short == "ModuleNotFoundError" and (
        "rmqarrow" in message or "numpy" in message or "pyarrow" in message
    ):
        return EngineUnavailableError(
            f"{message}{where}: the executors' Python lacks it; rmqarrow is shipped unless "
            f"spark.rmqarrow.ship=false, its dependencies (numpy, pyarrow) must be installed "
            f"in the executors' Python (spark.pyspark.python / PYSPARK_PYTHON)"
        )
    return EngineError(f"Spark task failed: {short}: {message}{where}")


@contextmanager
def spark_errors(app_id: str | None = None) -> Iterator[None]:
    """Run a block, turning pyspark/py4j exceptions into :func:`translate`'s error."""
    try:
        yield
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise translate(exc, app_id) from None
