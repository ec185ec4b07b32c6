"""Argument checks: Java-typed values must fit their Java type, keys must be ``str``."""

from __future__ import annotations

from collections.abc import Iterable

from rmqarrow.errors import InvalidKeyError, InvalidValueError
from rmqarrow.format.java import JAVA_INT_MAX as INT_MAX
from rmqarrow.format.java import JAVA_INT_MIN as INT_MIN
from rmqarrow.format.java import JAVA_LONG_MAX as LONG_MAX
from rmqarrow.format.java import JAVA_LONG_MIN as LONG_MIN
from rmqarrow.format.layout import Geometry, GeometryHint, as_hint, check_one_form
from rmqarrow.tiered.layout.binary import DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM

__all__ = ["check_geometry", "check_int", "check_long", "check_text", "distinct_keys"]


def _check_range(name: str, value: object, low: int, high: int, java: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(value.__index__())  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            raise InvalidValueError(
                f"{name} must be an integer (Java {java}), got {type(value).__name__}"
            ) from None
    if not low <= value <= high:
        raise InvalidValueError(f"{name} must fit a Java {java} ({low} .. {high}), got {value}")
    return value


def check_int(name: str, value: object) -> int:
    """``value`` as a Python int that fits a Java ``int``."""
    return _check_range(name, value, INT_MIN, INT_MAX, "int")


def check_long(name: str, value: object) -> int:
    """``value`` as a Python int that fits a Java ``long``."""
    return _check_range(name, value, LONG_MIN, LONG_MAX, "long")


def check_text(name: str, value: object) -> str:
    """``value`` if it is a ``str`` (topics and keys)."""
    if not isinstance(value, str):
        raise InvalidKeyError(f"{name} must be str, got {type(value).__name__}: {value!r:.80}")
    return value


def distinct_keys(keys: Iterable[str]) -> list[str]:
    """The keys in the given order, each once (RocketMQ is given a ``Set``)."""
    if isinstance(keys, str | bytes):
        raise InvalidKeyError("keys must be a collection of str, not one string")
    return list(dict.fromkeys(check_text("key", k) for k in keys))


def check_geometry(hash_slot_num: object, index_num: object) -> tuple[int, int]:
    """``(S, N)``, both positive Java ints whose file size still fits a Java int."""
    s = check_int("hash_slot_num", hash_slot_num)
    n = check_int("index_num", index_num)
    if s < 1 or n < 1:
        raise InvalidValueError(f"hash_slot_num and index_num must be >= 1, got {s} and {n}")
    if 28 + 8 * s + 32 * n > INT_MAX:
        raise InvalidValueError(
            f"hash_slot_num={s}, index_num={n} give a file of {28 + 8 * s + 32 * n} bytes; "
            f"RocketMQ addresses the file with Java ints (at most {INT_MAX})"
        )
    return s, n


def tiered_counts(
    geometry: Geometry | GeometryHint | None, keywords: tuple[object, object]
) -> tuple[object, object]:
    """The ``(S, N)`` a tiered constructor was given, as ``geometry=`` or the
    ``hash_slot_num`` and ``index_num`` ``keywords`` (not both forms), the tiered defaults
    for what is not given; for :func:`check_geometry`."""
    hash_slot_num, index_num = keywords
    if geometry is not None:
        check_one_form(geometry, hash_slot_num=hash_slot_num, index_num=index_num)
        hint = as_hint(geometry)
        hash_slot_num, index_num = hint.hash_slot_num, hint.index_num
    return (
        DEFAULT_HASH_SLOT_NUM if hash_slot_num is None else hash_slot_num,
        DEFAULT_INDEX_NUM if index_num is None else index_num,
    )
