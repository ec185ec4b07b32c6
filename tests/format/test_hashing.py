"""The key hash: Java String.hashCode over UTF-16, abs, MIN_VALUE -> 0."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from golden_data import GoldenSet
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqarrow import IndexFile, InvalidKeyError, index_key_hash, index_key_hashes
from rmqarrow.format.hashing import java_string_hash


def reference_hash(key: str) -> int:
    """Java's definition, spelled out: h = 31*h + unit over UTF-16 code units, int32."""
    h = 0
    units = key.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return 0 if signed == -(1 << 31) else abs(signed)


@pytest.mark.parametrize(
    ("key", "java_hash"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", -(2**31)),
    ],
)
def test_known_java_values(key: str, java_hash: int) -> None:
    assert java_string_hash(key) == java_hash
    expected = 0 if java_hash == -(2**31) else abs(java_hash)
    assert index_key_hash(key) == expected


def test_golden_entries_hold_our_hashes(golden: GoldenSet) -> None:
    """Every put of every golden set stored exactly index_key_hash(key)."""
    puts = iter(golden.puts)
    for path in golden.file_paths:
        with IndexFile.open(path, golden.hash_slot_num, golden.index_num) as f:
            stored = f.regions.entries["key_hash"][1 : f.index_count].astype(np.int64).tolist()
        expected = [index_key_hash(next(puts).key) for _ in stored]
        assert stored == expected


keys = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)


@settings(deadline=None)  # the first example loads the compiled kernels
@given(st.lists(keys, max_size=40))
def test_vectorized_equals_scalar(values: list[str]) -> None:
    expected = [reference_hash(k) for k in values]
    assert index_key_hashes(values).tolist() == expected
    assert [index_key_hash(k) for k in values] == expected
    arrow_safe = [k for k in values if not any("\ud800" <= c <= "\udfff" for c in k)]
    assert index_key_hashes(pa.array(arrow_safe, pa.string())).tolist() == [
        reference_hash(k) for k in arrow_safe
    ]  # Arrow strings are UTF-8: they cannot hold a lone surrogate


def test_vectorized_edge_cases() -> None:
    values = ["", "😀", "a" * 10_000, "é" * 3, "polygenelubricants", "x\u0000y"]
    chunked = pa.chunked_array([values[:3], values[3:]])
    expected = [reference_hash(k) for k in values]
    assert index_key_hashes(values).tolist() == expected
    assert index_key_hashes(chunked).tolist() == expected
    assert index_key_hashes(pa.array(values).slice(2)).tolist() == expected[2:]
    assert index_key_hashes([]).dtype == np.int32


def test_lone_surrogates_hash_like_java() -> None:
    # Java strings may hold unpaired surrogates; Arrow cannot, a Python str can.
    assert index_key_hash("\ud800") == 0xD800
    assert index_key_hash("x\udfffy") == reference_hash("x\udfffy")
    assert index_key_hashes(["ok", "\ud800", "x\udfffy"]).tolist() == [
        reference_hash(k) for k in ["ok", "\ud800", "x\udfffy"]
    ]


@pytest.mark.parametrize("bad", [None, b"bytes", 7, ["a"]])
def test_bad_keys_are_refused(bad: object) -> None:
    with pytest.raises(InvalidKeyError, match="must be str"):
        index_key_hash(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidKeyError):
        index_key_hashes(["ok", bad])  # type: ignore[list-item]


def test_null_in_arrow_keys_is_refused() -> None:
    with pytest.raises(InvalidKeyError, match="null"):
        index_key_hashes(pa.array(["a", None]))


# -- the vectorized (dot-product) hash path and its exact fallback ---------------------------

#: Any code point, surrogates included, so that Python keys carry lone surrogates too.
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=90)
ASCII_TEXT = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=90)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
@settings(deadline=None, max_examples=150)
@given(values=st.lists(st.one_of(ANY_TEXT, ASCII_TEXT), max_size=40))
def test_hash_kernels_equal_java_key_by_key(kernel: str, values: list[str]) -> None:
    """Mixed ASCII (dot-product path) and non-ASCII keys (exact path): every key equal to
    ``java_string_hash``, whatever its neighbours (the fast path reads past a key)."""
    expected = [0 if (h := java_string_hash(k)) == -(2**31) else abs(h) for k in values]
    assert index_key_hashes(values, kernel=kernel).tolist() == expected
    safe = [k for k in values if not any("\ud800" <= c <= "\udfff" for c in k)]
    arr = pa.array(safe, pa.large_string())
    assert index_key_hashes(arr, kernel=kernel).tolist() == [reference_hash(k) for k in safe]


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_hash_kernel_boundaries(kernel: str) -> None:
    """Lengths around the 16-byte blocks and the 64-byte fast-path limit, a non-ASCII
    byte right after an ASCII key, non-BMP pairs, and a key hashing to MIN_VALUE."""
    values = ["k" * n for n in (0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 1000)]
    values += ["abc", "é", "x" * 20, "\U0001f600" * 3, "polygenelubricants", ""]
    for sliced in (values, values[5:]):
        arr = pa.array(sliced, pa.string())
        assert index_key_hashes(arr, kernel=kernel).tolist() == [reference_hash(k) for k in sliced]
    assert index_key_hashes(["polygenelubricants"], kernel=kernel).tolist() == [0]
