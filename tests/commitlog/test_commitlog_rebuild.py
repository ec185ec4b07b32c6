"""Acceptance: the index rebuilt offline from the golden CommitLog is RocketMQ's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_data import golden_set

from rmqarrow.commitlog import index_records
from rmqarrow.index.service import IndexService, answer_queries


@pytest.mark.parametrize("batch_rows", [1, 64, 65536])
def test_rebuild_equals_golden_index(
    golden_commitlog: Path, tmp_path: Path, batch_rows: int
) -> None:
    gs = golden_set("commitlog_store1")
    store = tmp_path / "index"
    with IndexService(store, gs.hash_slot_num, gs.index_num) as service:
        service.load()
        for batch in index_records(golden_commitlog, batch_rows=batch_rows):
            service.build_index_batch(batch)
        service.flush()
    built = sorted(store.iterdir())
    assert len(built) == len(gs.file_paths)
    for mine, golden in zip(built, gs.file_paths, strict=True):
        assert mine.read_bytes() == golden.read_bytes(), golden.name
    answers = answer_queries(
        store, gs.queries, hash_slot_num=gs.hash_slot_num, index_num=gs.index_num
    )
    assert answers == gs.expected
