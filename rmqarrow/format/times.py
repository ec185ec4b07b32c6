"""The one parser of times given by people: epoch milliseconds or ISO 8601.

RocketMQ stores times as epoch milliseconds; people copy them from logs, from ``rmqarrow``
tables (plain integers, or the ISO column) or type a date.  :func:`parse_time` takes:

* an integer: epoch milliseconds.  A value between 10^8 and 10^11 looks like epoch
  *seconds* (1973-2286 in seconds, 1970-01-02..1973 in ms) and is refused with the ms value
  to pass instead; ``0`` and the Java long bounds pass through (open ranges).
* ISO 8601 (``2026-01-15``, ``2026-01-15T10:20:30.123+08:00``, ``...Z``): with a zone as
  given, without one in the **local** zone of this machine (as RocketMQ names its files).

Everything else raises :class:`rmqarrow.errors.UsageError` naming the option.
"""

from __future__ import annotations

import datetime as _dt

from rmqarrow.errors import UsageError

__all__ = ["TIME_HELP", "format_time", "parse_time"]

#: the sentence every time option's ``--help`` carries
TIME_HELP = "epoch ms or ISO 8601 (e.g. 2026-01-15T10:20:30+08:00; local zone when none given)"

_SECONDS_LOW = 10**8
_SECONDS_HIGH = 10**11
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def parse_time(text: str | int, option: str = "time") -> int:
    """Epoch milliseconds from ``text`` (see the module docstring)."""
    raw = str(text).strip()
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = None
    if value is not None:
        if _SECONDS_LOW <= abs(value) < _SECONDS_HIGH:
            raise UsageError(
                f"{option} {raw}: looks like epoch seconds; rmqarrow takes epoch milliseconds "
                f"(pass {value * 1000}) or ISO 8601"
            )
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
