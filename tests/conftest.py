"""Shared fixtures: the golden sets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generated_store import GeneratedStore, build_generated
from golden_data import ALL_SETS, GoldenSet

# the S3 server fixtures (s3_server, s3_bucket) of the object-storage tests
pytest_plugins = ["s3_server"]


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


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """Two long byte strings that differ: where, not a dump of both.

    pytest prints every byte of both sides on CI (it does not shorten there); for an index
    file of a megabyte that is tens of thousands of lines and the failing test's name
    scrolls away.  The first differing offset is named, with the index-file region it
    falls in (header, slot table or entry) for a reader who compares index files.
    """
    if op != "==" or not isinstance(left, bytes) or not isinstance(right, bytes):
        return None
    if max(len(left), len(right)) <= 256:
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
        min(len(left), len(right)),
    )
    lines = [
        f"{len(left)} bytes == {len(right)} bytes",
        f"first difference at offset {at}: {left[at : at + 16]!r} != {right[at : at + 16]!r}",
    ]
    if at < 40:
        lines.append("(bytes 0..39: an index file's header)")
    return lines
