"""Shared fixtures: the golden sets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generated_store import GeneratedStore, build_generated
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
    from rmqarrow.converters.spark.session import get_spark

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


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    """Read-only: never modify it (copy it first)."""
    return build_generated(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="session")
def generated_dataset(generated: GeneratedStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rmqarrow.converters.parquet.export import export_store

    out = tmp_path_factory.mktemp("generated-ds") / "dataset"
    export_store(
        generated.store, out, hash_slot_num=generated.hash_slot_num, index_num=generated.index_num
    )
    return out
