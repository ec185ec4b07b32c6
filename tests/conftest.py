"""Shared fixtures: the golden sets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from golden_data import ALL_SETS, GoldenSet


@pytest.fixture(params=ALL_SETS, ids=lambda s: s.name)
def golden(request: pytest.FixtureRequest) -> GoldenSet:
    """Each golden set in turn."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local SparkSession of the test run (``local[2]``, quiet, no UI).

    Starting Spark takes 10-20 s and one JVM holds one SparkContext, so every Spark test
    shares this session; code under test that asks for ``local[2]`` gets it too.
    """
    from converters.spark_session import get_spark

    session = get_spark(
        "local[2]",
        app_name="rmqarrow-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.sql.adaptive.enabled": "true",
        },
    )
    yield session
    session.stop()
