"""Generic Java integer and string semantics, nothing specific to the index format.

Java ``int`` and ``long`` wrap in two's complement, integer division truncates toward zero
and ``%`` takes the sign of the dividend; Python does none of that, so every place that must
agree with Java to the bit goes through these helpers.  ``java_long`` already lives in
:mod:`rmqarrow._rules` and is reused; the rest is new here (to move to a shared module).
"""

from __future__ import annotations

from rmqarrow._rules import java_long

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "is_blank",
    "java_int",
    "java_long",
    "java_rem",
    "trunc_div",
]

INT_MIN = -(1 << 31)
INT_MAX = (1 << 31) - 1
LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1

#: ``Character.isWhitespace`` over UTF-16 units: the ASCII controls TAB..CR and FS..US, plus
#: the Unicode space, line and paragraph separators except the no-break spaces
#: (U+00A0, U+2007, U+202F).
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)


def java_int(value: int) -> int:
    """Narrow a Python int to Java ``int`` (keep the low 32 bits, two's complement)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value > INT_MAX else value


def trunc_div(a: int, b: int) -> int:
    """Java integer division ``a / b``: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def java_rem(a: int, b: int) -> int:
    """Java ``a % b``: the remainder has the sign of the dividend ``a``."""
    return a - trunc_div(a, b) * b


def is_blank(text: str) -> bool:
    """commons-lang ``StringUtils.isBlank``: empty, or every char Java whitespace.

    Characters outside the BMP are two surrogate units in Java, neither of them whitespace,
    so checking Python code points gives the same answer.
    """
    return all(ch in _JAVA_WHITESPACE for ch in text)
