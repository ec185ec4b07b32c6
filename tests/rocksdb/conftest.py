"""Fixtures of the RocksDB-index tests."""

from __future__ import annotations

import pytest
from rocksdb_golden_data import ALL_ROCKSDB, RocksDBSet

pytest.importorskip("rocksdict", reason="the rocksdb extra (rocksdict) is not installed")


@pytest.fixture(params=ALL_ROCKSDB, ids=lambda s: s.name)
def rocksdb_set(request: pytest.FixtureRequest) -> RocksDBSet:
    """Each RocksDB golden set in turn."""
    return request.param  # type: ignore[no-any-return]
