"""The command line of datasets of Delta tables: ``export --delta``, ``convert``, ``vacuum``,
``export --overwrite`` as one more version, and ``--as-of`` on every reader (query, sql,
stats, verify, import, info), each answer equal to the one that version gave when it was
the latest."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute
import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, build_generated
from legacy_dataset import legacy_layout
from rmqarrow.converters.delta.layout import is_delta_dataset
from rmqarrow.converters.duckdb.sql import connect

import rmqarrow
from rmqarrow.errors import InvalidValueError
from rmqarrow.index.service import IndexService

MESSAGES = 600


def _append(g: GeneratedStore, first: int, n: int) -> None:
    """``n`` more records indexed as a broker would (the newest file grows, new ones roll)."""
    ts = int(pa.compute.max(g.records.column("store_timestamp")).as_py())
    ids = range(first, first + n)
    with IndexService(g.store, g.hash_slot_num, g.index_num) as service:
        service.build_index_batch(
            pa.table(
                {
                    "topic": ["T"] * n,
                    "keys": [f"k{i % 7}" for i in ids],
                    "uniq_key": [f"u{i}" for i in ids],
                    "commit_log_offset": pa.array([10**9 + 100 * i for i in ids]),
                    "store_timestamp": pa.array([ts + i for i in ids], pa.int64()),
                    "sys_flag": pa.array([0] * n, pa.int32()),
                }
            )
        )
        service.flush()


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    status, out, err = run(capsys, *args)
    assert status == 0, err
    return json.loads(out)


def _answers(capsys: pytest.CaptureFixture[str], ds: Path, *as_of: str) -> dict[str, Any]:
    """What every reader says of ``ds`` (``as_of``: ``--as-of V`` or nothing)."""
    sql = "select count(*) n, sum(phy_offset) s from entries"
    out: dict[str, Any] = {
        "sql": _json(capsys, "sql", str(ds), sql, "--json", *as_of),
        "query": _json(
            capsys,
            "query",
            "x",
            "--engine",
            "duckdb",
            "--dataset",
            str(ds),
            "--key",
            "T#k3",
            "--max-num",
            "1000",
            "--json",
            *as_of,
        ),
        "stats": _json(capsys, "stats", str(ds), "--json", *as_of)["summary"],
    }
    info = _json(capsys, "info", str(ds), "--json", *as_of)
    out["info"] = {k: info[k] for k in ("run", "tables", "source_files")}
    return out


@pytest.fixture(scope="module")
def history(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[GeneratedStore, Path, Path, list[dict[str, Any]]]:
    """A store, a copy of it as it was at version 0, a Delta dataset of two versions (an
    export with ``--delta``, one incremental run), and each version's answers captured
    while it was the latest."""
    root = tmp_path_factory.mktemp("delta-cli")
    g = build_generated(root / "g", MESSAGES)
    ds = root / "ds"
    capsys = _Capture()
    assert rmqarrow.cli.main(["export", "--delta", str(g.store), str(ds)]) == 0
    assert is_delta_dataset(ds)
    answers = [capsys.answers(ds)]
    store0 = root / "store0"
    shutil.copytree(g.store, store0)
    _append(g, 1000, 150)
    assert rmqarrow.cli.main(["export", "--incremental", str(g.store), str(ds)]) == 0
    answers.append(capsys.answers(ds))
    assert answers[0] != answers[1]  # the run changed what every reader says
    return g, ds, store0, answers


class _Capture:
    """``capsys`` for a module fixture (which has none): stdout and stderr redirected."""

    def __init__(self) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()

    def readouterr(self) -> tuple[str, str]:
        got = self.out.getvalue(), self.err.getvalue()
        for stream in (self.out, self.err):
            stream.seek(0)
            stream.truncate()
        return got

    def answers(self, ds: Path) -> dict[str, Any]:
        with contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.err):
            return _answers(self, ds)  # type: ignore[arg-type]


def test_as_of_answers_as_that_version_did_when_latest(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _g, ds, _store0, answers = history
    assert _answers(capsys, ds) == answers[1]
    assert _answers(capsys, ds, "--as-of", "0") == answers[0]
    assert _answers(capsys, ds, "--as-of", "1") == answers[1]
    versions = _json(capsys, "info", str(ds), "--json")["versions"]
    assert [(v["version"], v["app"], v["readable"]) for v in versions] == [
        (0, "rmqarrow-export", True),
        (1, "rmqarrow-incremental", True),
    ]
    # a time: the run current then (the version's own commit time, ISO 8601 with Z)
    assert _answers(capsys, ds, "--as-of", versions[0]["time"]) == answers[0]
    status, out, _ = run(capsys, "info", str(ds))
    assert status == 0 and "rmqarrow-incremental" in out and "readable" in out


def test_import_and_verify_as_of_read_that_version(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    _g, ds, store0, _answers0 = history
    status, _, err = run(capsys, "import", str(ds), str(tmp_path / "v0"), "--as-of", "0")
    assert status == 0, err
    assert {p.name: p.read_bytes() for p in (tmp_path / "v0").iterdir()} == {
        p.name: p.read_bytes() for p in store0.iterdir()
    }  # byte-identical to the store exported at version 0
    engines = ("--engines", "native,duckdb")
    status, out, err = run(
        capsys, "verify", str(store0), "--dataset", str(ds), "--as-of", "0", *engines
    )
    assert status == 0, out + err
    status, out, _ = run(capsys, "verify", str(store0), "--dataset", str(ds), *engines)
    assert status == 1  # the latest version holds entries the store of version 0 lacks


def test_as_of_refusals_are_one_line(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    g, ds, _store0, _answers = history
    manifest_ds = tmp_path / "m"
    assert run(capsys, "export", str(g.store), str(manifest_ds))[0] == 0
    legacy_layout(manifest_ds)
    status, _, err = run(capsys, "sql", str(manifest_ds), "select 1", "--as-of", "0")
    assert status == 1
    one_error(err, "manifest layout keeps no versions")
    status, _, err = run(capsys, "info", str(ds), "--as-of", "7")
    one_error(err, "no version 7", "versions 0 to 1")
    status, _, err = run(capsys, "stats", str(ds), "--as-of", "2001-01-01T00:00:00Z")
    one_error(err, "nothing was exported as of 2001-01-01", "oldest version kept (0)")
    status, _, err = run(capsys, "import", str(ds), str(tmp_path / "x"), "--as-of", "soon")
    assert status == 2
    one_error(err, "expected a version")
    assert not (tmp_path / "x").exists()
    status, _, err = run(capsys, "query", str(g.store), "--key", "T#k1", "--as-of", "0")
    one_error(err, "as_of reads an older version of an exported dataset")
    status, _, err = run(capsys, "verify", str(g.store), "--as-of", "0")
    one_error(err, "give --dataset")


def test_vacuum_dry_run_lists_and_deletes_nothing_then_old_versions_are_refused(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(history[1], ds)
    before = sorted(str(p) for p in ds.rglob("*"))
    status, _, err = run(capsys, "vacuum", str(ds), "--retention", "0", "--dry-run")
    assert status == 1
    one_error(err, "under 1", "force")
    listed = _json(capsys, "vacuum", str(ds), "--retention", "0", "--force", "--dry-run", "--json")
    assert listed["dry_run"] and any(listed["files"].values())
    assert sorted(str(p) for p in ds.rglob("*")) == before
    assert _answers(capsys, ds, "--as-of", "0") == history[3][0]
    deleted = _json(capsys, "vacuum", str(ds), "--retention", "0", "--force", "--json")
    assert deleted["files"] == listed["files"]
    for table, names in deleted["files"].items():
        assert names and not any((ds / table / n).exists() for n in names)
    status, _, err = run(capsys, "sql", str(ds), "select 1", "--as-of", "0")
    one_error(err, "version 0 was vacuumed", "can be read: 1")
    assert _answers(capsys, ds) == history[3][1]
    info = _json(capsys, "info", str(ds), "--json")
    assert [v["readable"] for v in info["versions"]] == [False, True]
    status, _, err = run(capsys, "vacuum", str(history[0].store))
    one_error(err, "this takes a dataset made by `rmqarrow export`")


def test_overwrite_is_one_more_version(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    g, _ds, _store0, answers = history
    ds = tmp_path / "ds"
    shutil.copytree(history[1], ds)
    store = tmp_path / "store"
    shutil.copytree(g.store, store)
    for name in sorted(p.name for p in store.iterdir())[:2]:
        (store / name).unlink()  # the broker expired its oldest files: the export differs
    status, _, err = run(capsys, "export", "--overwrite", str(store), str(ds))
    assert status == 0, err
    assert is_delta_dataset(ds)  # an existing dataset keeps its layout
    latest = _answers(capsys, ds)
    versions = _json(capsys, "info", str(ds), "--json")["versions"]
    assert [(v["version"], v["app"]) for v in versions][-1] == (2, "rmqarrow-export")
    assert latest["info"]["run"] == 2 and latest != answers[1]
    assert _answers(capsys, ds, "--as-of", "0") == answers[0]
    assert _answers(capsys, ds, "--as-of", "1") == answers[1]
    assert len(latest["info"]["source_files"]) == len(list(store.iterdir()))
    # the next incremental run builds on the overwrite (no part name of the history reused)
    status, out, err = run(
        capsys, "verify", str(store), "--dataset", str(ds), "--engines", "native,duckdb"
    )
    assert status == 0, out + err
    _append(g, 5000, 40)  # g.store grows; the copy `store` is the one exported: grow it too
    shutil.rmtree(store)
    shutil.copytree(g.store, store)
    assert run(capsys, "export", "--incremental", "--reexport-changed", str(store), str(ds))[0] == 0
    status, out, err = run(
        capsys, "verify", str(store), "--dataset", str(ds), "--engines", "native,duckdb"
    )
    assert status == 0, out + err
    assert _answers(capsys, ds, "--as-of", "0") == answers[0]


def test_convert_makes_a_manifest_dataset_delta(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    g = history[0]
    ds = tmp_path / "m"
    assert run(capsys, "export", str(g.store), str(ds))[0] == 0
    legacy_layout(ds)
    before = _json(capsys, "sql", str(ds), "select count(*) n from entries", "--json")
    assert _json(capsys, "convert", str(ds), "--json")["converted"] is True
    assert is_delta_dataset(ds)
    assert (
        _json(capsys, "sql", str(ds), "select count(*) n from entries", "--json", "--as-of", "0")
        == before
    )
    assert _json(capsys, "convert", str(ds), "--json")["converted"] is False
    _, _, err = run(capsys, "convert", str(g.store))
    one_error(err, "this takes a dataset made by `rmqarrow export`")


def test_open_as_of_pins_every_reader(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
) -> None:
    _g, ds, _store0, answers = history
    rows0 = answers[0]["sql"]["rows"][0]["n"]
    store = rmqarrow.open(ds, as_of=0)
    assert store.version == 0
    assert store.scan("entries").read_all().num_rows == rows0
    assert store.to_duckdb().execute("select count(*) from entries").fetchone() == (rows0,)
    with rmqarrow.open(ds, as_of=0):  # any engine inside the block reads version 0
        assert connect(ds).execute("select count(*) from entries").fetchone() == (rows0,)
    assert connect(ds).execute("select count(*) from entries").fetchone() != (rows0,)
    assert rmqarrow.open(ds).version is None
    with pytest.raises(InvalidValueError, match="no version 9"):
        rmqarrow.open(ds, as_of=9)


@pytest.mark.spark
def test_spark_reads_the_version_opened(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]], spark: Any
) -> None:
    _g, ds, _store0, answers = history
    with rmqarrow.open(ds, as_of=0) as store:
        store.to_spark(spark)
        assert (
            spark.sql("select count(*) n from entries").collect()[0]["n"]
            == (answers[0]["sql"]["rows"][0]["n"])
        )
    rmqarrow.open(ds).to_spark(spark)
    assert (
        spark.sql("select count(*) n from entries").collect()[0]["n"]
        == (answers[1]["sql"]["rows"][0]["n"])
    )


def test_the_manifest_layout_is_no_longer_written(
    history: tuple[GeneratedStore, Path, Path, list[dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    g = history[0]
    out = tmp_path / "m"
    status, _, err = run(capsys, "export", "--layout", "manifest", str(g.store), str(out))
    assert status == 2
    one_error(err, "invalid choice: 'manifest'")
    assert not out.exists()
    # the older spellings of the one layout still work in scripts
    assert run(capsys, "export", "--layout", "delta", str(g.store), str(out))[0] == 0
    assert is_delta_dataset(out)
