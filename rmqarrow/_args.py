"""Argument checks of the Python API, written once: the project's errors, never a
silent coercion.

Python would take ``writable="no"`` as true, ``max_num=5.5`` as a count and ``True`` as
1; RocketMQ's Java signatures (``boolean``, ``int``, ``long``) cannot receive such
values, so rmqarrow refuses them with :class:`~rmqarrow.errors.InvalidValueError` naming
the argument, what it expects and what it got.
"""

from __future__ import annotations

import numbers

from rmqarrow.errors import InvalidValueError

__all__ = ["check_flag", "check_int", "check_non_negative"]


def check_flag(name: str, value: object) -> bool:
    """``value`` when it is a ``bool`` (``numpy.bool_`` too); refused otherwise."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise InvalidValueError(
        f"{name} must be True or False, got {type(value).__name__} {value!r:.80}"
    )


def check_int(name: str, value: object) -> int:
    """``value`` as an ``int`` when it is an integer (numpy's included) and not a bool."""
    if (
        isinstance(value, bool)
        or type(value).__name__ == "bool_"
        or not isinstance(value, numbers.Integral)
    ):
        raise InvalidValueError(f"{name} must be an int, got {type(value).__name__} {value!r:.80}")
    return int(value)


def check_non_negative(name: str, value: object) -> int:
    """:func:`check_int`, and ``>= 0``."""
    n = check_int(name, value)
    if n < 0:
        raise InvalidValueError(f"{name} must be >= 0, got {n}")
    return n
