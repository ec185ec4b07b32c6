"""Fixtures of the tiered-index tests."""

from __future__ import annotations

import pytest
from tiered_golden_data import ALL_TIERED, TieredSet


@pytest.fixture(params=ALL_TIERED, ids=lambda s: s.name)
def tiered_set(request: pytest.FixtureRequest) -> TieredSet:
    """Each tiered golden set in turn."""
    return request.param  # type: ignore[no-any-return]
