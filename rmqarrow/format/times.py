"""The one parser of times given by people: epoch milliseconds or ISO 8601.

RocketMQ stores times as epoch milliseconds; people copy them from logs, from ``rmqarrow``
tables (plain integers, or the ISO column) or type a date.  :func:`parse_time` takes:

* an integer: epoch milliseconds.  A value between 10^8 and 10^11 looks like epoch
  *seconds* (1973-2286 in seconds, 1970-01-02..1973 in ms) and is refused with the ms value
  to pass instead; ``0`` and the Java long bounds pass through (open ranges).
* ISO 8601 (``2026-01-15``, ``2026-01-15T10:20:30.123+08:00``, ``...Z``): with a zone as
  given, without one in the **local** zone of this machine (as RocketMQ names its files).
  A local time that does not exist (the hour skipped when daylight saving time starts)
  is refused naming the gap, never shifted; one that exists twice (the hour repeated when
  it ends) is the **first** of the two, the earlier instant, as ``java.time`` resolves it
  (``ZonedDateTime.of``), with a note saying so and how to pick the other (an offset).

Everything else raises :class:`rmqarrow.errors.UsageError` naming the option.

The Python API (:func:`as_epoch_ms`) takes the same: an int (numpy integers too) with
the same epoch-seconds rule (an :class:`~rmqarrow.errors.InvalidValueError` there), an
ISO 8601 string, or a ``datetime`` (aware as given; naive in the local zone, with the
same gap and repeated-hour rules) or ``date`` (its midnight, local), so a time the
command line refuses is refused by ``store.query`` too, and one it takes is taken.
A range whose begin is after its end is refused by both (:func:`check_range`).
"""

from __future__ import annotations

import datetime as _dt
import logging
import operator

from rmqarrow.errors import InvalidValueError, UsageError

__all__ = [
    "TIME_HELP",
    "TimeBound",
    "as_epoch_ms",
    "check_epoch_ms",
    "check_range",
    "datetime_ms",
    "format_time",
    "looks_like_seconds",
    "parse_time",
    "time_range",
]

#: what the Python API takes for a time bound (see :func:`as_epoch_ms`)
TimeBound = int | str | _dt.datetime | _dt.date

#: the sentence every time option's ``--help`` carries
TIME_HELP = "epoch ms or ISO 8601 (e.g. 2026-01-15T10:20:30+08:00; local zone when none given)"

_SECONDS_LOW = 10**8
_SECONDS_HIGH = 10**11
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def looks_like_seconds(value: int) -> bool:
    """Whether the integer ``value`` reads as epoch seconds rather than milliseconds (see
    the module docstring; ``0`` and the Java long bounds do not)."""
    return _SECONDS_LOW <= abs(value) < _SECONDS_HIGH


def _seconds_message(name: str, raw: str, value: int) -> str:
    return (
        f"{name} {raw}: looks like epoch seconds; rmqarrow takes epoch milliseconds "
        f"(pass {value * 1000})"
    )


def check_epoch_ms(name: str, value: int) -> int:
    """``value`` (an API argument such as ``begin``) when it can be epoch milliseconds; one
    in the epoch-seconds band is refused with :class:`~rmqarrow.errors.InvalidValueError`
    naming the ms value to pass, as :func:`parse_time` refuses it on the command line."""
    if looks_like_seconds(value):
        raise InvalidValueError(_seconds_message(name, str(value), value))
    return value


def parse_time(text: str | int, option: str = "time") -> int:
    """Epoch milliseconds from ``text`` (see the module docstring)."""
    raw = str(text).strip()
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = None
    if value is not None:
        if looks_like_seconds(value):
            raise UsageError(_seconds_message(option, raw, value) + " or ISO 8601")
        return value
    if "," in raw and raw.replace(",", "").isdigit():
        raise UsageError(
            f"{option} {raw!r}: drop the thousands separators (pass {raw.replace(',', '')})"
        )
    try:
        moment = _dt.datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError:
        raise UsageError(
            f"{option} {raw!r}: expected epoch milliseconds or ISO 8601 "
            "(2026-01-15T10:20:30, with +08:00 or Z for a zone; local zone when none)"
        ) from None
    return datetime_ms(moment, option, raw)


def datetime_ms(moment: _dt.datetime, name: str = "time", shown: str | None = None) -> int:
    """Epoch milliseconds of ``moment``: aware as given, naive in the local zone (a time
    in a DST gap refused, one in a repeated hour the first of the two, with a note)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        moment = _local(moment.replace(tzinfo=None), name, shown or moment.isoformat())
    return (moment - _EPOCH) // _dt.timedelta(milliseconds=1)


def _local(naive: _dt.datetime, name: str, shown: str) -> _dt.datetime:
    try:
        first, second = naive.replace(fold=0).astimezone(), naive.replace(fold=1).astimezone()
        # a wall time exists when going back to the local zone gives it again
        exists = [m for m in (first, second) if m.astimezone().replace(tzinfo=None) == naive]
    except (OverflowError, ValueError):
        # the C library probes a day either side, past year 1 or 9999 near the calendar's
        # ends (an open range given as 9999-12-31): no zone moves its clocks there
        return _near_calendar_end(naive, name, shown)
    if not exists:
        before = (naive - _dt.timedelta(hours=3)).astimezone()
        after = (naive + _dt.timedelta(hours=3)).astimezone()
        raise UsageError(
            f"{name} {shown}: no such local time: the clocks of the local zone "
            f"({before.tzname()} to {after.tzname()}) skip it (a daylight saving time gap); "
            f"give a zone offset (e.g. {_offset(before)} or {_offset(after)}) or epoch "
            "milliseconds"
        )
    if len(exists) == 2 and first.utcoffset() != second.utcoffset():
        logging.getLogger(__name__).info(
            "%s %s: this local time happens twice (the hour repeated when daylight saving "
            "time ends); taking the first, %s (%s, as java.time does); give %s for the second",
            name,
            shown,
            first.isoformat(),
            first.tzname(),
            second.isoformat(),
        )
    return exists[0]


def _near_calendar_end(naive: _dt.datetime, name: str, shown: str) -> _dt.datetime:
    """``naive`` in the local zone's offset of two days nearer the middle of the calendar."""
    step = _dt.timedelta(days=2)
    try:
        probe = (naive - step if naive.year > 1 else naive + step).astimezone()
        offset = probe.utcoffset()
    except (OverflowError, ValueError):
        offset = None
    if offset is None:
        raise UsageError(
            f"{name} {shown}: outside the range of the local zone's calendar; give a zone "
            "offset (e.g. Z) or epoch milliseconds"
        )
    return naive.replace(tzinfo=_dt.timezone(offset))


def _offset(moment: _dt.datetime) -> str:
    return moment.isoformat()[-6:]


def check_range(begin: int, end: int, names: tuple[str, str] = ("begin", "end")) -> None:
    """Refuse a time range whose begin is after its end (it would match nothing)."""
    if begin > end:
        raise UsageError(f"{names[0]} {begin} is after {names[1]} {end}: the range is empty")


def time_range(
    begin: object, end: object, names: tuple[str, str] = ("begin", "end")
) -> tuple[int, int]:
    """``begin`` and ``end`` given to the Python API as epoch milliseconds
    (:func:`as_epoch_ms`), a begin after the end refused (:func:`check_range`)."""
    b, e = as_epoch_ms(names[0], begin), as_epoch_ms(names[1], end)
    check_range(b, e, names)
    return b, e


def as_epoch_ms(name: str, value: object) -> int:
    """A time bound given to the Python API as epoch milliseconds: an int (a numpy
    integer too), an ISO 8601 string, a ``datetime`` or a ``date``, by the rules of
    :func:`parse_time`; anything else (a float, a bool) is refused naming what to give."""
    if isinstance(value, _dt.datetime):
        return datetime_ms(value, name)
    if isinstance(value, _dt.date):
        return datetime_ms(_dt.datetime.combine(value, _dt.time()), name)
    if isinstance(value, str):
        return parse_time(value, name)
    if not isinstance(value, bool) and hasattr(value, "__index__"):
        return check_epoch_ms(name, operator.index(value))
    raise InvalidValueError(
        f"{name} must be epoch milliseconds (an int), a datetime or an ISO 8601 string, "
        f"got {type(value).__name__}: {value!r}"
    )


def format_time(ms: int) -> str:
    """ISO 8601 in UTC with milliseconds, or ``-`` for values no calendar holds."""
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC)
    except (OverflowError, OSError, ValueError):
        return "-"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
