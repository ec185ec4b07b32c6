"""Shared fixtures: the golden sets."""

from __future__ import annotations

import pytest
from golden_data import ALL_SETS, GoldenSet


@pytest.fixture(params=ALL_SETS, ids=lambda s: s.name)
def golden(request: pytest.FixtureRequest) -> GoldenSet:
    """Each golden set in turn."""
    return request.param  # type: ignore[no-any-return]
