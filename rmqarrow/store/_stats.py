"""``stats`` of an IndexFile store or dataset: the figures, and the index against its log.

One body for both sources: a native store is read by DuckDB where it is small and through
a temporary export above :data:`STATS_EXPORT_ABOVE` entries (the streamed passes over a
dataset keep memory flat in the store's size); a dataset is read where it is.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqarrow._progress import ProgressCallback
from rmqarrow.errors import EngineUnavailableError, InvalidValueError, RmqArrowError, UsageError
from rmqarrow.format.layout import GeometryHint

if TYPE_CHECKING:
    from rmqarrow.converters.stats.sql import IndexStats

__all__ = ["STATS_ENGINES", "STATS_EXPORT_ABOVE", "StatsReport", "index_stats"]

_log = logging.getLogger("rmqarrow.store")

#: A native store with more entries than this is exported to a temporary dataset before
#: its figures are computed: DuckDB would otherwise hold every entry (about 8 GB in six
#: full files), where the dataset's streamed passes keep memory flat in the store's size.
STATS_EXPORT_ABOVE = 8 << 20

#: What checks the index against its log (every other figure is DuckDB's).
STATS_ENGINES = ("duckdb", "spark")


@dataclass(frozen=True)
class StatsReport:
    """What ``stats`` found: ``figures`` (every analysis), ``log_check`` (the index
    against the log, when one was given or came with the store root), and the store's
    ``check`` verdict when asked for (the HTML page's banner).

    A CommitLog that could not be read leaves the figures whole: ``log_failure`` says
    why, and ``log_error`` is the error when that log was asked for (``commitlog=``), which
    :meth:`raise_for_log` raises (a store root's own log is only warned about)."""

    figures: IndexStats
    log_check: dict[str, Any] | None = None
    log_failure: str | None = None
    check: dict[str, Any] | None = None
    log_error: RmqArrowError | None = field(default=None, compare=False, repr=False)

    def raise_for_log(self) -> None:
        """Raise the error of the CommitLog asked for, when it could not be read."""
        if self.log_error is not None:
            raise self.log_error


@dataclass(frozen=True)
class StatsSource:
    """Where the figures are read: a native store's index folder or a dataset."""

    path: Path
    geometry: GeometryHint
    #: the entries of a native store (decides the temporary export)
    entries: int = 0
    commitlog: Path | None = None
    #: the CommitLog came with a broker store root rather than being asked for
    commitlog_implicit: bool = False


def _check_arguments(top: int, limit: int, between: tuple[int, int] | None, engine: str) -> None:
    for name, value in (("top", top), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidValueError(f"{name} must be an int >= 0, got {value!r}")
    if between is not None and between[0] > between[1]:
        raise InvalidValueError(f"between {between[0]} {between[1]}: the first time is later")
    if engine not in STATS_ENGINES:
        raise UsageError(f"unknown stats engine {engine!r}; choose from {', '.join(STATS_ENGINES)}")


def index_stats(
    source: StatsSource,
    *,
    export: Callable[[Path, ProgressCallback | None], object] | None,
    check: Callable[[], dict[str, Any]] | None,
    top: int,
    between: tuple[int, int] | None,
    limit: int,
    engine: str,
    master: str | None,
    progress: ProgressCallback | None,
) -> StatsReport:
    """The figures of ``source``: a dataset when ``export`` is None, else a native store,
    which ``export(dest, progress)`` writes as a temporary dataset when it is large;
    ``check()`` gives the verdict a report carries."""
    from rmqarrow.converters.duckdb.sql import check_against_log, connect
    from rmqarrow.converters.stats.sql import collect

    _check_arguments(top, limit, between, engine)
    spark_check = engine == "spark"
    if spark_check and source.commitlog is None:
        raise UsageError(
            "the spark engine checks the index against the log: give commitlog=DIR, "
            "its CommitLog (the other figures are DuckDB's)"
        )
    log_check: dict[str, Any] | None = None
    failure: RmqArrowError | None = None
    with contextlib.ExitStack() as stack:
        dataset = str(source.path) if export is None else None
        if export is not None and source.entries > STATS_EXPORT_ABOVE:
            spill = stack.enter_context(tempfile.TemporaryDirectory(prefix="rmqarrow-stats-"))
            _log.info(
                "%s entries: exporting the store to a temporary dataset in %s first "
                "(removed after), so memory stays flat in the store's size",
                f"{source.entries:,}",
                spill,
            )
            dataset = str(Path(spill) / "dataset")
            export(Path(dataset), progress)
        con = connect(
            str(source.path) if dataset is None else dataset,
            geometry=source.geometry,
            commitlog=None if spark_check else source.commitlog,
        )
        try:
            figures = collect(
                con, top=top, between=between, limit=limit, dataset=dataset, progress=progress
            )
            if source.commitlog is not None and not spark_check:
                try:
                    log_check = check_against_log(con, examples=top)
                except RmqArrowError as exc:  # a damaged log: the index figures still stand
                    failure = exc
        finally:
            con.close()
    if spark_check:
        log_check = _spark_log_check(source, master, top)
    note = None if failure is None else " ".join(str(failure).split())
    if note is not None and source.commitlog_implicit:
        _log.warning("the index was not checked against its CommitLog: %s", note)
    return StatsReport(
        figures,
        log_check,
        note,
        None if check is None else check(),
        None if source.commitlog_implicit else failure,
    )


def _spark_log_check(source: StatsSource, master: str | None, top: int) -> dict[str, Any]:
    """The check against the log computed in Spark (the figures DuckDB's computes)."""
    try:
        from rmqarrow.converters.spark import check_against_log, get_spark, register_tables
    except ImportError as exc:
        raise EngineUnavailableError(
            f"the spark engine needs pyspark ({exc}); pip install 'rmqarrow[spark]'"
        ) from None
    spark = get_spark(master, app_name="rmqarrow-stats")
    register_tables(
        spark,
        source.path,
        geometry=source.geometry,
        commitlog=source.commitlog,
    )
    return check_against_log(spark, examples=top)
