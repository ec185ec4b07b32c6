"""Datasets on object storage: exported through a real S3 server (tests/s3_server.py)
and read back as the same dataset on local disk; unsupported locations refused in one line.
"""

from __future__ import annotations

import json
import socket
import tempfile
from pathlib import Path

import pytest
from cli_run import one_error, run
from deltalake import DeltaTable
from generated_store import GeneratedStore, build_generated
from pyarrow import fs as pafs
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import read_manifest

from rmqarrow._paths import ObjectLocation, dataset_location
from rmqarrow.errors import OutputExistsError, UnsupportedLocationError

TABLES = ("entries", "files", "slots")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("gen"), 300)


def _export(g: GeneratedStore, out: str | Path, **kw: object) -> dict[str, object]:
    return export_store(g.store, out, hash_slot_num=g.hash_slot_num, index_num=g.index_num, **kw)  # type: ignore[arg-type]


def _part_bytes(root: str | Path, manifest: dict[str, object]) -> dict[str, bytes]:
    """Each table's parts' bytes in order, by table (names differ: the S3 ones carry a
    run token)."""
    where = dataset_location(root)
    out: dict[str, bytes] = {}
    for record in sorted(manifest["parts"], key=lambda r: r["path"]):  # type: ignore[attr-defined]
        table = str(record["path"]).split("/")[0]
        out[table] = out.get(table, b"") + (where / str(record["path"])).read_bytes()  # type: ignore[operator]
    return out


def test_export_to_s3_is_the_local_export(
    generated: GeneratedStore, s3_bucket: str, tmp_path: Path
) -> None:
    uri = f"{s3_bucket}/lake/ds/"
    _export(generated, uri)  # delta implied by the URI
    _export(generated, tmp_path / "ds")
    remote, local = read_manifest(uri), read_manifest(tmp_path / "ds")
    assert remote["tables"] == local["tables"]
    assert remote["delta"] == local["delta"]
    assert _part_bytes(uri, remote) == _part_bytes(tmp_path / "ds", local)
    # a plain Delta reader on S3 sees the same rows
    for table in TABLES:
        rows = DeltaTable(f"{s3_bucket}/lake/ds/{table}").to_pyarrow_table()
        assert rows.num_rows == local["tables"][table]["rows"]


def test_existing_s3_dataset_is_kept_or_replaced_in_a_new_version(
    generated: GeneratedStore, s3_bucket: str
) -> None:
    uri = f"{s3_bucket}/ds"
    _export(generated, uri)
    first = read_manifest(uri)
    with pytest.raises(OutputExistsError, match="already there"):
        _export(generated, uri)
    _export(generated, uri, overwrite=True)
    second = read_manifest(uri)
    assert second["delta"]["version"] == first["delta"]["version"] + 1
    assert second["tables"] == first["tables"]
    assert not {r["path"] for r in second["parts"]} & {r["path"] for r in first["parts"]}
    # the first run stays readable as of its version
    assert read_manifest(uri, as_of=first["delta"]["version"])["parts"] == first["parts"]
    # and opened (or asked with --as-of) at it, the local copy is of that run
    import rmqarrow

    with rmqarrow.open(uri, as_of=first["delta"]["version"]) as store:
        copied = read_manifest(store.path)
        assert [r["path"] for r in copied["parts"]] == [r["path"] for r in first["parts"]]


def test_sql_as_of_on_s3(
    generated: GeneratedStore, s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"{s3_bucket}/asof"
    _export(generated, uri)
    _export(generated, uri, overwrite=True)
    query = "SELECT count(*) AS n FROM entries"
    status, out, err = run(capsys, "sql", uri, query, "--json", "--as-of", "0")
    assert status == 0, err
    assert json.loads(out)["rows"] == [{"n": read_manifest(uri)["tables"]["entries"]["rows"]}]
    status, out, err = run(capsys, "sql", uri, query, "--as-of", "7")
    one_error(err, "no version 7")


def test_foreign_prefixes_refused_on_s3(generated: GeneratedStore, s3_bucket: str) -> None:
    fs, root = ObjectLocation(s3_bucket).filesystem()
    with fs.open_output_stream(f"{root}/other/notes.txt") as f:
        f.write(b"not rmqarrow's")
    with pytest.raises(OutputExistsError, match="not a dataset"):
        _export(generated, s3_bucket)
    left = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    assert [i.path for i in left if i.type == pafs.FileType.File] == [f"{root}/other/notes.txt"]


@pytest.mark.parametrize("uri", ["ftp://host/ds", "hdfs+x://h/ds", "s3://bucket/a//b"])
def test_unsupported_locations_refused_never_written_locally(
    generated: GeneratedStore,
    uri: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsupportedLocationError):
        _export(generated, uri)
    assert list(tmp_path.iterdir()) == []
    status, _, err = run(capsys, "export", str(generated.store), uri)
    assert status in (1, 2)
    one_error(err, uri)
    assert list(tmp_path.iterdir()) == []


def test_cli_exports_to_s3(
    generated: GeneratedStore, s3_bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"{s3_bucket}/cli"
    status, out, _ = run(capsys, "export", str(generated.store), uri, "--json")
    assert status == 0, out
    local = _export(generated, tmp_path / "ds")
    assert read_manifest(uri)["tables"] == local["tables"]
    status, _, err = run(capsys, "export", str(generated.store), uri)
    assert status == 1
    one_error(err, "already there")


def test_import_from_s3_is_the_import_of_the_local_export(
    generated: GeneratedStore,
    s3_bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"{s3_bucket}/ds"
    _export(generated, uri)
    _export(generated, tmp_path / "ds")
    status, _, err = run(capsys, "import", uri, str(tmp_path / "from-s3"))
    assert status == 0, err
    status, _, err = run(capsys, "import", str(tmp_path / "ds"), str(tmp_path / "from-disk"))
    assert status == 0, err
    names = sorted(p.name for p in (tmp_path / "from-disk").iterdir())
    assert sorted(p.name for p in (tmp_path / "from-s3").iterdir()) == names
    for name in names:
        a = (tmp_path / "from-s3" / name).read_bytes()
        assert a == (tmp_path / "from-disk" / name).read_bytes(), name
    # the store API: the dataset opens, answers, and its local copy goes on close
    import rmqarrow

    with rmqarrow.open(uri) as store:
        copy = store.path
        rows = read_manifest(tmp_path / "ds")["tables"]["entries"]["rows"]
        assert store.scan("entries").read_all().num_rows == rows
    assert not copy.exists()


def test_a_native_store_on_s3_is_refused_in_one_line(
    s3_bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run(capsys, "import", f"{s3_bucket}/nothing", "out")
    assert status == 1
    one_error(err, "no dataset here")
    status, _, err = run(capsys, "check", f"{s3_bucket}/index")
    assert status == 2
    one_error(err, "not supported here")


def test_a_missing_bucket_or_a_dead_endpoint_is_one_line(
    generated: GeneratedStore,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "export", str(generated.store), "s3://no-such-bucket-x/ds")
    assert status == 1
    one_error(err, "s3://no-such-bucket-x/ds", "check the bucket")
    _export(generated, f"{s3_bucket}/ds")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{s.getsockname()[1]}")
        status, _, err = run(capsys, "import", f"{s3_bucket}/ds", str(tmp_path / "out"))
    assert status == 1
    one_error(err, f"{s3_bucket}/ds", "AWS_ENDPOINT_URL")
    assert not (tmp_path / "out").exists()


def _rounded(value: object) -> object:
    """``value`` with its floats to 9 digits (DuckDB sums floats in no fixed order)."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_sql_and_stats_on_s3_answer_as_on_disk(
    generated: GeneratedStore,
    s3_bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"{s3_bucket}/ds"
    _export(generated, uri)
    _export(generated, tmp_path / "ds")
    query = "SELECT count(*) AS n, sum(phy_offset) AS s, min(key_hash) AS k FROM entries"
    answers = []
    for where in (uri, str(tmp_path / "ds")):
        status, out, err = run(capsys, "sql", where, query, "--json")
        assert status == 0, err
        status, stats, err = run(capsys, "stats", where, "--json")
        assert status == 0, err
        answers.append((out, _rounded(json.loads(stats))))
    assert answers[0] == answers[1]
    assert not list(Path(tempfile.gettempdir()).glob("rmqarrow-snapshot-*"))
