"""GeometryHint: what a caller said of an IndexFile geometry (either count, both, neither),
how it resolves for a file size, and the public functions that take it as ``geometry=``
beside the older ``hash_slot_num=`` and ``index_num=`` keywords."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rmqarrow
from rmqarrow import (
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    Geometry,
    GeometryError,
    GeometryHint,
    IndexFile,
    IndexService,
    UsageError,
    as_hint,
)
from rmqarrow.format.layout import geometry_hint
from rmqarrow.tiered import TieredIndexFile

T0 = 1_700_000_000_000


def test_exported_from_the_package() -> None:
    assert {"GeometryHint", "as_hint", "Geometry"} <= set(rmqarrow.__all__)
    assert rmqarrow.GeometryHint is GeometryHint


@pytest.mark.parametrize(
    ("kwargs", "name", "found"),
    [
        ({"hash_slot_num": 0}, "hash_slot_num", "0"),
        ({"index_num": -3}, "index_num", "-3"),
        ({"hash_slot_num": True}, "hash_slot_num", "True"),
        ({"index_num": "8"}, "index_num", "'8'"),
        ({"hash_slot_num": 1.5}, "hash_slot_num", "1.5"),
    ],
)
def test_counts_are_positive_ints(kwargs: dict[str, object], name: str, found: str) -> None:
    with pytest.raises(GeometryError, match=f"{name}: expected a positive int, found {found}"):
        GeometryHint(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(GeometryError, match=f"{name}: expected a positive int"):
        Geometry(**{"hash_slot_num": 4, "index_num": 8, **kwargs})  # type: ignore[arg-type]


def test_given_complete_and_nothing() -> None:
    assert GeometryHint() == GeometryHint.NONE and not GeometryHint.NONE.given
    assert GeometryHint(4).given and not GeometryHint(4).complete
    assert GeometryHint(index_num=8).given and GeometryHint(4, 8).complete
    with pytest.raises(AttributeError):
        GeometryHint(4).hash_slot_num = 5  # type: ignore[misc]


def test_or_default_and_or_else() -> None:
    assert GeometryHint().or_default() == Geometry(DEFAULT_HASH_SLOT_NUM, DEFAULT_INDEX_NUM)
    assert GeometryHint(4).or_default() == Geometry(4, DEFAULT_INDEX_NUM)
    assert GeometryHint(index_num=8).or_else(Geometry(2, 3)) == Geometry(2, 8)
    assert GeometryHint(4, 8).or_else(Geometry(2, 3)) == Geometry(4, 8)


def test_resolve() -> None:
    default = Geometry()
    assert GeometryHint().resolve(default.file_size) == (default, None)
    fitted, note = GeometryHint().resolve(Geometry(10, 40).file_size)
    assert fitted == Geometry(10, 40) and note is not None and "1:4 ratio" in note
    assert GeometryHint().resolve(12345) == (default, None)  # fits nothing: the defaults
    # a given count wins, whatever the size; the other is the default
    assert GeometryHint(10).resolve(Geometry(10, 40).file_size) == (
        Geometry(10, DEFAULT_INDEX_NUM),
        None,
    )


@given(
    st.one_of(st.none(), st.integers(1, 1 << 20)),
    st.one_of(st.none(), st.integers(1, 1 << 20)),
    st.integers(0, 1 << 31),
)
def test_resolve_property(s: int | None, n: int | None, size: int) -> None:
    """Given counts are kept, the rest is the default; with none given the geometry is the
    defaults or, when the size fits one, a 1:4 geometry of exactly that size."""
    geometry, note = GeometryHint(s, n).resolve(size)
    if s is not None or n is not None:
        assert geometry == GeometryHint(s, n).or_default() and note is None
        return
    fitted = Geometry.for_size_default_ratio(size)
    if size == Geometry().file_size or fitted is None:
        assert geometry == Geometry() and note is None
    else:
        assert geometry == fitted and geometry.file_size == size
        assert geometry.index_num == 4 * geometry.hash_slot_num and note is not None


def test_as_hint() -> None:
    assert as_hint(None) is GeometryHint.NONE
    hint = GeometryHint(4)
    assert as_hint(hint) is hint
    assert as_hint(Geometry(4, 8)) == GeometryHint(4, 8)
    with pytest.raises(UsageError, match="expected a Geometry, a GeometryHint or None, found"):
        as_hint((4, 8))  # type: ignore[arg-type]


def test_one_form_only() -> None:
    assert geometry_hint(None, 4, None) == GeometryHint(4)
    assert geometry_hint(Geometry(4, 8)) == GeometryHint(4, 8)
    with pytest.raises(UsageError, match=r"geometry=.* and hash_slot_num=4 were both given"):
        geometry_hint(GeometryHint(index_num=8), 4, None)


def test_public_edges_take_either_form(tmp_path: Path) -> None:
    store = tmp_path / "index"
    with IndexService(store, 8, 32, clock=lambda: T0) as svc:  # the older arguments
        svc.new_file().put_key("k", 100, T0)
        svc.flush()
    (name,) = [p.name for p in store.iterdir()]
    with IndexService(store, geometry=Geometry(8, 32), read_only=True) as svc:
        svc.load()
        assert svc.geometry == Geometry(8, 32) and len(svc.files) == 1
    with IndexFile.open(store / name, geometry=GeometryHint(8, 32)) as f:
        assert f.geometry == Geometry(8, 32)
    with IndexFile.open(store / name, hash_slot_num=8, index_num=32) as f:
        assert f.geometry == Geometry(8, 32)
    with IndexFile.create(tmp_path / "new", geometry=GeometryHint(index_num=6)) as f:
        assert f.geometry == Geometry(DEFAULT_HASH_SLOT_NUM, 6)
    assert rmqarrow.answer_queries(store, [("k", 10)], geometry=Geometry(8, 32)) == [[100]]
    assert rmqarrow.answer_queries(store, [("k", 10)], hash_slot_num=8, index_num=32) == [[100]]
    with rmqarrow.open(store, geometry=GeometryHint(8)) as opened:
        assert opened.geometry_hint == GeometryHint(8)
    with rmqarrow.open(store, hash_slot_num=8, index_num=32) as opened:
        assert opened.geometry_hint == GeometryHint(8, 32)


@pytest.mark.parametrize(
    "call",
    [
        lambda p: rmqarrow.open(p, geometry=Geometry(8, 32), hash_slot_num=8),
        lambda p: rmqarrow.build(p / "b", records=p / "r.csv", geometry=Geometry(), index_num=9),
        lambda p: IndexFile.open(p / "f", 8, geometry=GeometryHint(8)),
        lambda p: IndexFile.create(p / "g", index_num=32, geometry=Geometry(8, 32)),
        lambda p: IndexService(p, 8, geometry=Geometry(8, 32)),
        lambda p: rmqarrow.answer_queries(p, [], geometry=GeometryHint(), index_num=32),
        lambda p: TieredIndexFile.create(p / "t", T0, 4, geometry=GeometryHint(4)),
    ],
)
def test_both_forms_are_refused(tmp_path: Path, call: object) -> None:
    with pytest.raises(UsageError, match=r"geometry=.* and (hash_slot_num|index_num)=.*both"):
        call(tmp_path)  # type: ignore[operator]
    assert not (tmp_path / "g").exists() and not (tmp_path / "t").exists()


def test_tiered_files_take_the_hint_by_the_tiered_defaults(tmp_path: Path) -> None:
    with TieredIndexFile.create(tmp_path / "a", T0, geometry=GeometryHint(4, 8)) as f:
        assert (f.hash_slot_num, f.index_num) == (4, 8)
    with TieredIndexFile.open(tmp_path / "a", geometry=GeometryHint(4, 8)) as f:
        assert (f.hash_slot_num, f.index_num) == (4, 8)
    with TieredIndexFile.open(tmp_path / "a", 4, 8) as f:  # the older arguments
        assert (f.hash_slot_num, f.index_num) == (4, 8)
