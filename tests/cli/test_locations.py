"""A location is a path on this machine (but a full export's dataset, which may be on
object storage): ``s3://bucket/lake`` and every other URI but ``file://`` are refused in
one line, never written as a local folder named ``s3:``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, build_generated

import rmqarrow
from rmqarrow.errors import UnsupportedLocationError, UsageError


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("locations") / "gen", messages=300)


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """Run in an empty folder, where a URI taken for a relative path would land."""
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(here)


# (export, --incremental and --follow to s3:// are supported: tests/converters/s3)
COMMANDS = [
    ["export", "{store}", "gs://bucket/lake", "--incremental"],
    ["export", "{store}", "ABFS://container/lake", "--follow", "--interval", "1"],
    ["build", "s3://bucket/index", "--from", "{records}"],
    ["import", "gs://bucket/lake", "out"],
    ["import", "{dataset}", "abfs://container/index"],
    ["query", "gs://bucket/lake", "--topic", "t", "--key", "k"],
    ["sql", "hdfs://nn/lake", "SELECT 1"],
    ["stats", "gs://bucket/lake"],
    ["stats", "{store}", "--plot", "s3://bucket/charts"],
    ["stats", "{store}", "--html", "s3://bucket/report.html"],
    ["export", "{store}", "ds2", "--commitlog", "s3://bucket/commitlog"],
    ["info", "gs://bucket/lake"],
    ["check", "s3://bucket/lake"],
    ["verify", "{store}", "--dataset", "abfs://container/lake"],
    ["verify", "s3://bucket/lake"],
]


@pytest.mark.parametrize(
    "argv", COMMANDS, ids=lambda a: " ".join(a[:1] + [x for x in a if "://" in x])
)
def test_a_uri_is_refused_in_one_line_and_nothing_is_written(
    gen: GeneratedStore, in_tmp: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    records = in_tmp / "records.parquet"
    import pyarrow.parquet as pq

    pq.write_table(gen.records, records)
    status, _, _ = run(capsys, "export", str(gen.store), str(in_tmp / "ds"))
    assert status == 0
    before = sorted(p.name for p in in_tmp.iterdir())
    args = [a.format(store=gen.store, records=records, dataset=in_tmp / "ds") for a in argv]
    status, out, err = run(capsys, *args)
    scheme = next(a for a in args if "://" in a).split("://")[0].lower()
    line = one_error(err, f"{scheme}:// locations are not supported")
    assert status == 2 and out == "", (status, out, line)
    assert sorted(p.name for p in in_tmp.iterdir()) == before  # no ./s3: folder


def test_a_file_uri_is_its_path(
    gen: GeneratedStore, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = in_tmp / "lake"
    status, _, err = run(capsys, "export", str(gen.store), target.as_uri())
    assert status == 0, err
    status, _, err = run(capsys, "export", str(gen.store), target.as_uri(), "--incremental")
    assert status == 0, err
    assert [p.name for p in in_tmp.iterdir()] == ["lake"]
    with rmqarrow.open(target.as_uri()) as store:
        assert store.kind == "dataset"


def test_the_python_api_refuses_a_uri(gen: GeneratedStore, in_tmp: Path) -> None:
    # (a dataset on s3:// is supported: tests/converters/s3)
    with pytest.raises(UnsupportedLocationError, match=r"hdfs:// locations are not supported"):
        rmqarrow.open("hdfs://nn/lake")
    with (
        rmqarrow.open(gen.store) as store,
        pytest.raises(UsageError, match=r"ftp:// locations are not supported"),
    ):
        store.export("ftp://host/lake")
    with pytest.raises(ValueError, match=r"file:// URI on host 'nas'"):
        rmqarrow.open("file://nas/share/lake")
    assert list(in_tmp.iterdir()) == []
