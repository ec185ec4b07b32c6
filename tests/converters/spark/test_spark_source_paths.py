"""The Spark sources take every kind of path the command line knows (batch and stream).

A broker store root reads its ``index/`` (``rocketmq_index``) or its ``commitlog/``
(``rocketmq_commitlog``); an index directory or file and a CommitLog directory read as
they are.  An exported dataset, an empty folder, a missing path and the other half of a
store are refused with one line naming what the path is and what to pass: at ``load()``,
at planning when the schema is given (``load()`` then asks nothing), and when a stream
starts, never as a stream that writes nothing forever.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from rmqarrow.demo import make_docs_workspace
from rmqarrow.demo.workspace import MESSAGES

pytestmark = pytest.mark.spark

INDEX, LOG = "rocketmq_index", "rocketmq_commitlog"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    (root / "empty").mkdir()
    return root


def _entries(ws: Path) -> int:
    from rmqarrow.converters.arrow.tables import store_tables

    return int(store_tables(ws / "store" / "index").entries.num_rows)


def _paths(ws: Path) -> dict[str, Path]:
    index = ws / "store" / "index"
    return {
        "store root": ws / "store",
        "index dir": index,
        "index file": sorted(index.iterdir())[-1],
        "commitlog dir": ws / "store" / "commitlog",
        "dataset": ws / "lake" / "idx",
        "empty folder": ws / "empty",
        "missing path": ws / "no-such-store",
    }


#: (format, kind of path, words the refusal says)
REFUSED = [
    (INDEX, "dataset", "an exported Parquet dataset"),
    (INDEX, "empty folder", "an empty directory"),
    (INDEX, "missing path", "no such"),
    (INDEX, "commitlog dir", "a CommitLog directory, not index files"),
    (LOG, "dataset", "an exported Parquet dataset"),
    (LOG, "empty folder", "an empty directory"),
    (LOG, "missing path", "no such"),
    (LOG, "index dir", "index files, not a CommitLog"),
]


def _said(err: BaseException, fmt: str, path: Path, words: str) -> None:
    text = str(err)
    assert f"{fmt}: " in text and str(path) in text and words in text, text
    assert f"{fmt} reads " in text  # and what to pass instead


def test_batch_reads_a_store_root_as_its_index_and_commitlog(spark: Any, ws: Path) -> None:
    from rmqarrow.converters.spark.source import register

    register(spark)
    paths = _paths(ws)
    total = _entries(ws)
    for kind in ("store root", "index dir"):
        assert spark.read.format(INDEX).load(str(paths[kind])).count() == total, kind
    one = spark.read.format(INDEX).load(str(paths["index file"])).count()
    assert 0 < one <= total
    for kind in ("store root", "commitlog dir"):
        assert spark.read.format(LOG).load(str(paths[kind])).count() == MESSAGES, kind


@pytest.mark.parametrize(("fmt", "kind", "words"), REFUSED)
def test_batch_refuses_the_wrong_path_at_load_and_at_planning(
    spark: Any, ws: Path, fmt: str, kind: str, words: str
) -> None:
    from rmqarrow.converters.spark.commitlog import spark_ddl as log_ddl
    from rmqarrow.converters.spark.source import register, spark_ddl

    register(spark)
    path = _paths(ws)[kind]
    with pytest.raises(Exception) as err:
        spark.read.format(fmt).load(str(path))
    _said(err.value, fmt, path, words)
    ddl = spark_ddl("entries") if fmt == INDEX else log_ddl()
    df = spark.read.format(fmt).schema(ddl).load(str(path))  # schema given: nothing asked yet
    with pytest.raises(Exception) as err:
        df.count()
    _said(err.value, fmt, path, words)


def _stream(spark: Any, fmt: str, path: Path, out: Path, ddl: str | None = None) -> Any:
    reader = spark.readStream.format(fmt)
    if ddl is not None:
        reader = reader.schema(ddl)
    return (
        reader.load(str(path))
        .writeStream.format("parquet")
        .option("path", str(out / "sink"))
        .option("checkpointLocation", str(out / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )


@pytest.mark.parametrize(
    ("fmt", "kind"),
    [
        (INDEX, "store root"),
        (INDEX, "index dir"),
        (INDEX, "index file"),
        (LOG, "store root"),
        (LOG, "commitlog dir"),
    ],
)
def test_available_now_stream_writes_every_row(
    spark: Any, ws: Path, tmp_path: Path, fmt: str, kind: str
) -> None:
    from rmqarrow.converters.spark.source import register

    register(spark)
    path = _paths(ws)[kind]
    query = _stream(spark, fmt, path, tmp_path)
    assert query.awaitTermination(300)
    if fmt == LOG:
        expected = MESSAGES
    else:
        expected = spark.read.format(INDEX).load(str(path)).count()
        assert expected == (_entries(ws) if kind != "index file" else expected) > 0
    assert spark.read.parquet(str(tmp_path / "sink")).count() == expected


@pytest.mark.parametrize(("fmt", "kind", "words"), REFUSED)
def test_available_now_stream_of_the_wrong_path_fails_as_it_starts(
    spark: Any, ws: Path, tmp_path: Path, fmt: str, kind: str, words: str
) -> None:
    from rmqarrow.converters.spark.commitlog import spark_ddl as log_ddl
    from rmqarrow.converters.spark.source import register, spark_ddl

    register(spark)
    path = _paths(ws)[kind]
    with pytest.raises(Exception) as err:
        _stream(spark, fmt, path, tmp_path)
    _said(err.value, fmt, path, words)
    ddl = spark_ddl("entries") if fmt == INDEX else log_ddl()
    with pytest.raises(Exception) as err:  # schema given: the stream itself refuses
        query = _stream(spark, fmt, path, tmp_path, ddl)
        try:
            finished = query.awaitTermination(300)
        finally:
            query.stop()
        assert finished, "the stream still runs"
    _said(err.value, fmt, path, words)
    sink = tmp_path / "sink"
    assert not sink.exists() or not any(p.suffix == ".parquet" for p in sink.iterdir())
    shutil.rmtree(tmp_path, ignore_errors=True)
