"""The compiled (numba) and pure-numpy hash kernels agree with the scalar hash, exactly."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from golden_data import GoldenSet
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqarrow import EngineUnavailableError, answer_queries
from rmqarrow.format.hashing import index_key_hash
from rmqarrow.kernels import _compiled as _kernels
from rmqarrow.kernels import hashing
from rmqarrow.kernels.hashing import index_key_hashes

EDGE = [
    "",
    "a",
    "Aa",
    "BB",
    "polygenelubricants",
    "😀",
    "a😀b",
    "é" * 3,
    "日本語",
    "x\x00y",
    "\U0010ffff",
    "\u07ff\u0800\uffff",
    "a" * 1000,
    "TopicTest#" + "k" * 40,
]
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=60)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_kernels_on_edge_cases(kernel: str) -> None:
    expected = [index_key_hash(k) for k in EDGE]
    assert index_key_hashes(pa.array(EDGE), kernel=kernel).tolist() == expected
    assert index_key_hashes(pa.array(EDGE, pa.large_string()), kernel=kernel).tolist() == expected
    assert index_key_hashes(pa.array(EDGE).slice(3), kernel=kernel).tolist() == expected[3:]
    assert (
        index_key_hashes(pa.chunked_array([EDGE[:5], EDGE[5:]]), kernel=kernel).tolist() == expected
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=50))
def test_kernels_equal_scalar(values: list[str]) -> None:
    expected = [index_key_hash(k) for k in values]
    arr = pa.array(values, pa.string())
    assert index_key_hashes(arr, kernel="numba").tolist() == expected
    assert index_key_hashes(arr, kernel="numpy").tolist() == expected


def test_lone_surrogates_from_python_keys() -> None:
    values = ["\ud800", "x\udfffy", "ok", "\udbff\udc00"]  # the last is a valid pair in Java
    expected = [index_key_hash(k) for k in values]
    for kernel in ("numba", "numpy"):
        assert index_key_hashes(values, kernel=kernel).tolist() == expected


def test_many_keys_in_blocks() -> None:
    rng = np.random.default_rng(7)
    values = [
        "".join(chr(c) for c in rng.integers(32, 0x3000, rng.integers(0, 30)))
        for _ in range(40_000)
    ]
    values[123] = "\U0001f600" * 5
    expected = [index_key_hash(k) for k in values]
    arr = pa.array(values)
    assert index_key_hashes(arr, kernel="numpy").tolist() == expected
    assert index_key_hashes(arr, kernel="numba").tolist() == expected


@pytest.mark.parametrize("threads", [2, 3])
def test_hashing_on_several_threads_equals_one(
    threads: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Slices hashed on several threads come back whole and in order (an uneven split, a
    sliced array, a chunked one, keys that take the exact serial path)."""
    monkeypatch.setattr(hashing, "PARALLEL_FROM", 1000)
    values = [f"TopicTest#{i:x}" if i % 97 else "a😀" * (i % 5) for i in range(10_007)]
    arr = pa.array(values).slice(3)
    one = index_key_hashes(arr)
    assert one.tolist() == [index_key_hash(k) for k in values[3:]]
    assert np.array_equal(index_key_hashes(arr, threads=threads), one)
    chunked = pa.chunked_array([arr.slice(0, 4000), arr.slice(4000)])
    assert np.array_equal(index_key_hashes(chunked, threads=threads), one)
    assert index_key_hashes(arr.slice(0, 999), threads=threads).size == 999  # below: one


def test_numpy_fallback_is_used_without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba -> ImportError
    monkeypatch.delitem(sys.modules, "rmqarrow.kernels._numba", raising=False)
    _kernels.reset()  # look the kernels up again, now without numba
    try:
        assert hashing.kernel_name() == "numpy"
        calls = []
        real = hashing._java_hashes_numpy

        def spy(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
            calls.append(len(offsets) - 1)
            return real(offsets, data)

        monkeypatch.setattr(hashing, "_java_hashes_numpy", spy)
        assert index_key_hashes(EDGE).tolist() == [index_key_hash(k) for k in EDGE]
        assert calls == [len(EDGE)]
        with pytest.raises(EngineUnavailableError, match="numba"):
            index_key_hashes(EDGE, kernel="numba")
    finally:
        _kernels.reset()


def test_kernel_name_with_numba() -> None:
    assert hashing.kernel_name() == "numba"
    with pytest.raises(ValueError, match="kernel"):
        index_key_hashes(["a"], kernel="cuda")


def test_bulk_build_and_lookup_without_numba(
    golden: GoldenSet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    bulk_writer: Callable[[GoldenSet, Path], list[Path]],
) -> None:
    """The whole bulk engine on the numpy kernels alone: same bytes, same answers."""
    monkeypatch.setenv("RMQARROW_NO_NUMBA", "1")
    _kernels.reset()
    request.addfinalizer(_kernels.reset)
    assert hashing.kernel_name() == "numpy"
    paths = bulk_writer(golden, tmp_path)
    for mine, theirs in zip(paths, golden.file_paths, strict=True):
        assert mine.read_bytes() == theirs.read_bytes()
    got = answer_queries(
        golden.store_dir,
        golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert got == golden.expected


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_all_ascii_keys_of_every_length(kernel: str) -> None:
    """An all-ASCII batch takes the eight-units-at-a-time path: every length mod 8."""
    values = ["".join(chr(33 + (i * 7 + j) % 94) for j in range(i)) for i in range(70)]
    values += ["polygenelubricants", "Aa", "BB", ""]
    expected = [index_key_hash(k) for k in values]
    assert index_key_hashes(pa.array(values), kernel=kernel).tolist() == expected
    assert index_key_hashes(pa.array(values).slice(5, 30), kernel=kernel).tolist() == expected[5:35]
