"""The options of the Spark sources: one table of names, one check, one parse.

Spark hands a Python data source its options in a ``CaseInsensitiveDict`` (keys
lower-cased), so names match whatever their case: ``hashSlotNum``, ``hashslotnum`` and
``HASHSLOTNUM`` are one option.  Each option has its documented camelCase name (as Spark's
own and Kafka's sources spell theirs), RocketMQ's setting name where the broker has one
(``maxHashSlotNum``, ``maxIndexNum``, ``mappedFileSizeCommitLog``), and the snake_case
name rmqarrow took before (still read, with a :class:`FutureWarning`).  A name no source
knows, or one of the other mode (``startingOffsets`` on a batch read), is refused with one
line naming it and the accepted names, the closest first: a misspelt option silently
ignored would read with the defaults and look right.

:func:`parse` checks and converts a source's options once, where the source is planned
(``DataSource.schema`` / ``reader`` / ``streamReader``), so every reader reads values, not
raw strings.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rmqarrow.errors import InvalidValueError, UsageError

__all__ = [
    "CATALOG_KEYS",
    "OPTIONS",
    "Option",
    "accepted",
    "parse",
]


@dataclass(frozen=True)
class Option:
    """One option: its name, what it takes, which source and mode read it."""

    name: str
    kind: str  # "int" (positive), "bool", "text"
    sources: frozenset[str]  # "index", "commitlog"
    modes: frozenset[str]  # "batch", "stream"
    aliases: tuple[str, ...] = ()  # other names (RocketMQ's settings), read as they are
    deprecated: tuple[str, ...] = ()  # former names, read with a warning


_BOTH = frozenset({"index", "commitlog"})
_INDEX = frozenset({"index"})
_LOG = frozenset({"commitlog"})
_ALL_MODES = frozenset({"batch", "stream"})
_BATCH = frozenset({"batch"})
_STREAM = frozenset({"stream"})

#: Every option of the two sources.  ``path`` is ``load(PATH)``'s.
OPTIONS: tuple[Option, ...] = (
    Option("path", "text", _BOTH, _ALL_MODES),
    Option("table", "text", _BOTH, _ALL_MODES),
    Option("hashSlotNum", "int", _INDEX, _ALL_MODES, ("maxHashSlotNum",), ("hash_slot_num",)),
    Option("indexNum", "int", _INDEX, _ALL_MODES, ("maxIndexNum",), ("index_num",)),
    Option("pieceRows", "int", _INDEX, _ALL_MODES, (), ("piece_rows",)),
    Option("batchRows", "int", _BOTH, _ALL_MODES, (), ("batch_rows",)),
    Option("pushdown", "bool", _INDEX, _BATCH),
    Option(
        "mappedFileSize",
        "int",
        _LOG,
        _ALL_MODES,
        ("mappedFileSizeCommitLog",),
        ("mapped_file_size",),
    ),
    Option("startingOffsets", "text", _BOTH, _STREAM),
    Option("maxEntriesPerTrigger", "int", _INDEX, _STREAM),
    Option("maxFilesPerTrigger", "int", _LOG, _STREAM),
    Option("failOnDataLoss", "bool", _BOTH, _STREAM),
)

#: Keys Spark adds for ``CREATE TABLE ... USING``: a catalog table, which Spark reads
#: without its options (see :func:`parse`).
CATALOG_KEYS = frozenset({"provider", "owner", "location"})

_BY_KEY: dict[str, tuple[Option, str]] = {}
for _opt in OPTIONS:
    for _spelling in (_opt.name, *_opt.aliases, *_opt.deprecated):
        _BY_KEY[_spelling.lower()] = (_opt, _spelling)


def accepted(source: str, mode: str) -> list[str]:
    """The documented names ``source`` reads in ``mode`` (``batch`` / ``stream``)."""
    return [o.name for o in OPTIONS if source in o.sources and mode in o.modes]


def _closest_first(key: str, names: list[str]) -> list[str]:
    """``names`` with the ones like ``key`` (any case, any underscores) first."""
    squash = {n: n.lower().replace("_", "") for n in names}
    near = difflib.get_close_matches(key.lower().replace("_", ""), list(squash.values()), 3, 0.6)
    first = [n for s in near for n in names if squash[n] == s]
    return first + [n for n in names if n not in first]


def _fmt_of(source: str) -> str:
    return "rocketmq_index" if source == "index" else "rocketmq_commitlog"


def _value(opt: Option, given: str, raw: Any) -> Any:
    if opt.kind == "int":
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise InvalidValueError(f"option {given} must be a whole number, got {raw!r}") from None
        if value < 1:
            raise InvalidValueError(f"option {given} must be positive, got {value}")
        return value
    if opt.kind == "bool":
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise InvalidValueError(f"option {given} must be true or false, got {raw!r}")
        return text == "true"
    return str(raw)


def parse(options: Mapping[str, Any], source: str, mode: str | None) -> dict[str, Any]:
    """``options`` checked for ``source`` (``index`` / ``commitlog``) read in ``mode``
    (``batch``, ``stream``, or ``None`` while Spark asks for the schema, which serves
    both): values by documented name, empty values left out.

    Raises :class:`~rmqarrow.errors.UsageError` for an option the source does not read
    (one line: the name, then the accepted ones, closest first), for two spellings of one
    option, and for a catalog table; :class:`~rmqarrow.errors.InvalidValueError` for a
    value that is not what the option takes.
    """
    fmt = _fmt_of(source)
    keys = {str(k).lower(): (str(k), v) for k, v in options.items()}
    if CATALOG_KEYS & set(keys):
        raise UsageError(
            f"CREATE TABLE ... USING {fmt}: Spark reads a catalog table of a Python data "
            "source without its options; use CREATE TEMPORARY VIEW name USING "
            f"{fmt} OPTIONS (path '/absolute/path', ...) instead"
        )
    modes = [mode] if mode else ["batch", "stream"]
    names = sorted({n for m in modes for n in accepted(source, m)}, key=str.lower)
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, (given, raw) in sorted(keys.items()):
        found = _BY_KEY.get(key)
        if found is None or source not in found[0].sources:
            listed = ", ".join(_closest_first(given, names))
            raise UsageError(f"{fmt}: unknown option {given!r}; {fmt} reads {listed}")
        opt, spelling = found
        if not any(m in opt.modes for m in modes):
            other = "spark.readStream" if "stream" in opt.modes else "spark.read"
            raise UsageError(f"{fmt}: option {opt.name} applies to {other} only")
        if opt.name in seen:
            raise UsageError(
                f"{fmt}: options {seen[opt.name]} and {given} are one option ({opt.name}); "
                "give it once"
            )
        seen[opt.name] = given
        if spelling in opt.deprecated:
            warnings.warn(
                f"{fmt}: option {spelling} is deprecated; use {opt.name}",
                FutureWarning,
                stacklevel=2,
            )
        if raw is None or str(raw) == "":
            continue
        out[opt.name] = _value(opt, given, raw)
    return out
