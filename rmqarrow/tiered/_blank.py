"""commons-lang ``StringUtils.isBlank`` with Java's whitespace: what a blank topic is."""

from __future__ import annotations

__all__ = ["is_blank"]

#: ``Character.isWhitespace`` over UTF-16 units: the ASCII controls TAB..CR and FS..US, plus
#: the Unicode space, line and paragraph separators except the no-break spaces
#: (U+00A0, U+2007, U+202F).
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)


def is_blank(text: str) -> bool:
    """commons-lang ``StringUtils.isBlank``: empty, or every char Java whitespace.

    Characters outside the BMP are two surrogate units in Java, neither of them whitespace,
    so checking Python code points gives the same answer.
    """
    return all(ch in _JAVA_WHITESPACE for ch in text)
