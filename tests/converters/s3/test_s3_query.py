"""query and verify --dataset on a dataset on object storage (a real S3 server,
tests/s3_server.py): the same answers as the same dataset exported on local disk, of the
latest run and of an older one (--as-of)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from cli_run import one_error, run
from generated_store import GeneratedStore, build_generated
from rmqarrow.converters.parquet.export import export_store


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("gen"), 300)


@pytest.fixture(scope="module")
def smaller(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("small"), 120, seed=3)


def _export(g: GeneratedStore, out: str | Path, **kw: object) -> None:
    export_store(g.store, out, hash_slot_num=g.hash_slot_num, index_num=g.index_num, **kw)  # type: ignore[arg-type]


def _queries_file(g: GeneratedStore, path: Path, n: int = 40) -> Path:
    keys = [*sorted(g.keys)[:n], "no-such-topic#no-such-key"]
    path.write_text("".join(f"{k}\n" for k in keys))
    return path


def _answers(capsys: pytest.CaptureFixture[str], *args: str) -> list[object]:
    status, out, err = run(capsys, "query", *args, "--json")
    assert status == 0, err
    return json.loads(out)["answers"]  # type: ignore[no-any-return]


def test_query_on_s3_answers_as_on_disk(
    generated: GeneratedStore,
    smaller: GeneratedStore,
    s3_bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"{s3_bucket}/ds"
    _export(smaller, uri)  # version 0: another store, read back with --as-of
    _export(generated, uri, overwrite=True)
    _export(generated, tmp_path / "new")
    _export(smaller, tmp_path / "old")
    queries = str(_queries_file(generated, tmp_path / "q.tsv"))
    remote = _answers(capsys, uri, "--engine", "duckdb", "--queries", queries)
    local = _answers(capsys, str(tmp_path / "new"), "--engine", "duckdb", "--queries", queries)
    assert remote == local
    assert any(a["phy_offsets"] for a in remote)  # type: ignore[index]
    # the native lookup of the store agrees
    native = _answers(capsys, str(generated.store), "--queries", queries)
    assert remote == native
    # --dataset (the positional store is then not read) and --as-of the first run
    old = _answers(
        capsys, str(generated.store), "--dataset", uri, "--engine", "duckdb",
        "--queries", queries, "--as-of", "0",
    )  # fmt: skip
    assert old == _answers(
        capsys, str(tmp_path / "old"), "--engine", "duckdb", "--queries", queries
    )
    assert old != remote
    assert not list(Path(tempfile.gettempdir()).glob("rmqarrow-snapshot-*"))


def test_verify_against_an_s3_dataset(
    generated: GeneratedStore,
    smaller: GeneratedStore,
    s3_bucket: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"{s3_bucket}/ds"
    _export(generated, uri)
    _export(smaller, uri, overwrite=True)
    common = ("--engines", "native,duckdb", "--sample", "50", "--json")
    # the run of version 0 is the export of this store: it agrees
    status, out, err = run(capsys, "verify", str(generated.store), "--dataset", uri,
                           "--as-of", "0", *common)  # fmt: skip
    assert status == 0, err
    report = json.loads(out)
    assert report["ok"] is True
    # the latest run is of another store: verify says so (exit 1), read all the same
    status, out, err = run(capsys, "verify", str(generated.store), "--dataset", uri, *common)
    assert status == 1
    assert json.loads(out)["ok"] is False
    status, _, err = run(capsys, "verify", str(generated.store), "--dataset", f"{uri}-none")
    assert status == 1
    one_error(err, f"{uri}-none")
    assert not list(Path(tempfile.gettempdir()).glob("rmqarrow-snapshot-*"))
