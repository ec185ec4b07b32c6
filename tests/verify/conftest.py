"""Fixtures for the verify and demo tests: a generated store with out-of-order times, Spark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmqarrow.demo import demo_geometry, index_keys_of, read_index_records, write_demo_commitlog
from rmqarrow.service import IndexService

MESSAGES = 1500


@dataclass(frozen=True)
class GeneratedStore:
    root: Path
    store: Path
    records: Any  # pyarrow.Table of index records
    keys: list[str]
    hash_slot_num: int
    index_num: int


def build_generated(root: Path, messages: int = MESSAGES, seed: int = 7) -> GeneratedStore:
    """A store built from the demo stream (several files, rollbacks, out-of-order times)."""
    root.mkdir(parents=True, exist_ok=True)
    commitlog, _late = write_demo_commitlog(root, messages, seed)
    records = read_index_records(commitlog)
    hsn, inum = demo_geometry(messages)
    store = root / "store"
    with IndexService(store, hsn, inum) as service:
        service.build_index_batch(records)
        service.flush()
    return GeneratedStore(root, store, records, index_keys_of(records), hsn, inum)


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    """Read-only: never modify it (copy it first)."""
    return build_generated(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="session")
def generated_dataset(
    generated: GeneratedStore, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    from converters.export import export_store

    out = tmp_path_factory.mktemp("generated-ds") / "dataset"
    export_store(generated.store, out, hash_slot_num=generated.hash_slot_num,
                 index_num=generated.index_num)
    return out
