"""Java integer arithmetic, written once: the bounds and wrap rules RocketMQ's code obeys.

RocketMQ computes offsets, times and hashes with Java ``int`` and ``long``; Python ints
never overflow, so every place that must reproduce a Java result uses these helpers.
"""

from __future__ import annotations

__all__ = [
    "JAVA_INT_MAX",
    "JAVA_INT_MIN",
    "JAVA_LONG_MAX",
    "JAVA_LONG_MIN",
    "java_div",
    "java_int",
    "java_long",
    "java_rem",
]

JAVA_INT_MAX = 2**31 - 1
JAVA_INT_MIN = -(2**31)
JAVA_LONG_MAX = 2**63 - 1
JAVA_LONG_MIN = -(2**63)

_INT_MOD = 1 << 32
_LONG_MOD = 1 << 64


def java_int(value: int) -> int:
    """Wrap a Python int to Java ``int`` (two's complement int32)."""
    value &= _INT_MOD - 1
    return value - _INT_MOD if value >= 1 << 31 else value


def java_long(value: int) -> int:
    """Wrap a Python int to Java ``long`` (two's complement int64)."""
    value &= _LONG_MOD - 1
    return value - _LONG_MOD if value >= 1 << 63 else value


def java_div(a: int, b: int) -> int:
    """Java integer division: truncated toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def java_rem(a: int, b: int) -> int:
    """Java ``a % b``: the remainder takes the sign of the dividend ``a``."""
    return a - java_div(a, b) * b
