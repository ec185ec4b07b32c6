"""The one parser of times given by people: epoch milliseconds or ISO 8601.

RocketMQ stores times as epoch milliseconds; people copy them from logs, from ``rmqarrow``
tables (plain integers, or the ISO column) or type a date.  :func:`parse_time` takes:

* an integer: epoch milliseconds.  A value between 10^8 and 10^11 looks like epoch
  *seconds* (1973-2286 in seconds, 1970-01-02..1973 in ms) and is refused with the ms value
  to pass instead; ``0`` and the Java long bounds pass through (open ranges).
* ISO 8601 (``2026-01-15``, ``2026-01-15T10:20:30.123+08:00``, ``...Z``): with a zone as
  given, without one in the **local** zone of this machine (as RocketMQ names its files).

Everything else raises :class:`rmqarrow.errors.UsageError` naming the option.

The Python API takes integers only and applies the same epoch-seconds rule through
:func:`check_epoch_ms` (an :class:`~rmqarrow.errors.InvalidValueError` there), so a time
the command line refuses is refused by ``store.query`` too.
"""

from __future__ import annotations

import datetime as _dt

from rmqarrow.errors import InvalidValueError, UsageError

__all__ = ["TIME_HELP", "check_epoch_ms", "format_time", "looks_like_seconds", "parse_time"]

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
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local zone
    return (moment - _EPOCH) // _dt.timedelta(milliseconds=1)


def format_time(ms: int) -> str:
    """ISO 8601 in UTC with milliseconds, or ``-`` for values no calendar holds."""
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC)
    except (OverflowError, OSError, ValueError):
        return "-"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
