"""Every store has every verb; each kind declares the ones it answers, and the
declaration is the truth: the methods it implements, nothing discovered by type."""

from __future__ import annotations

import pytest
from golden_data import golden_set
from tiered_golden_data import TieredSet

import rmqarrow
from rmqarrow import Kind, Verb
from rmqarrow.errors import UnsupportedOperationError, UsageError
from rmqarrow.store import (
    DatasetStore,
    IndexStore,
    RocksDBDatasetStore,
    RocksDBStore,
    Store,
    TieredDatasetStore,
    TieredStore,
)

KINDS_OF_STORE = [
    IndexStore,
    DatasetStore,
    TieredStore,
    TieredDatasetStore,
    RocksDBStore,
    RocksDBDatasetStore,
]


@pytest.mark.parametrize("cls", KINDS_OF_STORE, ids=lambda c: c.__name__)
def test_declared_verbs_are_the_implemented_ones(cls: type[Store]) -> None:
    implemented = {v for v in Verb if getattr(cls, v.value) is not getattr(Store, v.value)}
    assert cls.verbs == implemented


def test_every_verb_is_a_method_of_every_store() -> None:
    for verb in Verb:
        assert callable(getattr(Store, verb.value)), verb


def test_an_undeclared_verb_is_refused_in_library_terms() -> None:
    tiered = TieredSet("tiered_basic")
    with rmqarrow.open(
        tiered.dir / "unsealed.bin",
        hash_slot_num=tiered.hash_slot_num,
        index_num=tiered.index_num,
    ) as store:
        assert store.kind == Kind.TIERED and store.kind == "tiered"
        assert store.supports(Verb.CHECK) and store.supports("query")
        assert not store.supports(Verb.VACUUM)
        with pytest.raises(UsageError, match="verb=vaccum: not a verb; choose from query, "):
            store.supports("vaccum")
        with pytest.raises(UnsupportedOperationError, match="vacuum is not available"):
            store.vacuum()
        with pytest.raises(UnsupportedOperationError, match="only an exported dataset"):
            store.versions()


def test_index_store_answers_what_it_declares() -> None:
    g = golden_set("rolling")
    with rmqarrow.open(g.store_dir, hash_slot_num=g.hash_slot_num, index_num=g.index_num) as store:
        assert store.format == rmqarrow.Format.INDEX
        assert {Verb.SYNC, Verb.VERIFY, Verb.STATS} <= store.verbs
        assert not store.supports(Verb.IMPORT_FILES)
        with pytest.raises(UnsupportedOperationError):
            store.import_files("never-written")
