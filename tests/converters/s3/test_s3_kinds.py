"""Tiered and RocksDB-index datasets on object storage: exported through a real S3 server
(tests/s3_server.py) as the index kind's are, and read back as the same dataset on local
disk (import byte for byte, the same answers, versions, ``--as-of``); a dataset of another
kind is refused, on S3 as locally, in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import Ran, call, one_error
from golden_data import golden_set
from rmqarrow.converters.delta.run import open_snapshot
from rmqarrow.converters.parquet.kind_read import read_kind_manifest
from rocksdb_golden_data import ALL_ROCKSDB, RocksDBSet
from tiered_golden_data import ALL_TIERED, unescape

import rmqarrow
from rmqarrow._paths import dataset_location
from rmqarrow.errors import UsageError
from rmqarrow.format.detect import ROCKSDB_DATASET_FORMAT, TIERED_DATASET_FORMAT
from rmqarrow.rocksdb._tsv import format_answer, read_expected, read_queries
from rmqarrow.rocksdb.parquet import ROCKSDB_TABLES
from rmqarrow.tiered.parquet.export import TIERED_TABLES

TIERED = next(s for s in ALL_TIERED if s.name == "tiered_basic")
BASIC = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_basic")
EDGE = next(s for s in ALL_ROCKSDB if s.name == "rocksdb_edge")
GOLDEN_INDEX = golden_set("rolling")


def _ok(*args: str) -> Ran:
    ran = call(*args)
    assert ran.status == 0, ran.err
    assert "Traceback" not in ran.err
    return ran


def _pin_version(uri: str, pin_table: str) -> int:
    return open_snapshot(uri, pin_table=pin_table).version


def _tiered_queries(tmp_path: Path) -> Path:
    """The golden queries of the tiered set as a ``--queries`` file (topic#key, max, begin,
    end): those whose key a plain TSV line holds."""
    lines = (TIERED.dir / "queries.tsv").read_text().splitlines()
    rows = [
        [f"{unescape(t)}#{unescape(k)}", m, b, e]
        for t, k, m, b, e in (x.split("\t") for x in lines)
    ]
    plain = [r for r in rows if not any(c in r[0] for c in "\t\r\n\\")]
    assert len(plain) > 20
    tsv = tmp_path / "tiered-queries.tsv"
    tsv.write_text("".join("\t".join(r) + "\n" for r in plain))
    return tsv


def _tiered_answers(dataset: str, queries: Path, *as_of: str) -> object:
    ran = _ok("query", dataset, "--queries", str(queries), "--engine", "duckdb", "--json", *as_of)
    return json.loads(ran.out)["answers"]


def _rocksdb_limits(s: RocksDBSet) -> list[str]:
    return [
        "--max-msgs-num-batch",
        str(s.max_msgs_num_batch),
        "--max-query-days",
        str(s.max_query_days),
    ]


def _rocksdb_out(dataset: str, s: RocksDBSet, *options: str) -> str:
    """The batch answers of ``query`` on ``dataset`` to ``s``'s golden queries (DuckDB's
    unless ``options`` say another engine)."""
    queries = str(s.dir / "queries.tsv")
    engine = [] if "--engine" in options else ["--engine", "duckdb"]
    return _ok("query", dataset, "--queries", queries, *_rocksdb_limits(s), *engine, *options).out


def _rocksdb_golden(dataset: str, s: RocksDBSet, **open_args: object) -> bool:
    """Whether the dataset answers every golden query of ``s`` as RocketMQ did."""
    with rmqarrow.open(
        dataset,
        max_msgs_num_batch=s.max_msgs_num_batch,
        max_query_days=s.max_query_days,
        **open_args,  # type: ignore[arg-type]
    ) as store:
        got = store.answers(read_queries(s.dir / "queries.tsv"), engine="duckdb")
    return [format_answer(a) for a in got] == read_expected(s.dir / "expected.tsv")


def test_tiered_export_to_s3_imports_and_answers_as_the_local_one(
    s3_bucket: str, tmp_path: Path
) -> None:
    uri, local = f"{s3_bucket}/lake/tiered", tmp_path / "tiered"
    source = str(TIERED.dir / "unsealed.bin")
    exported = json.loads(_ok("export", source, uri, "--json").out)
    assert exported["dataset"] == uri and exported["kind"] == "tiered"
    _ok("export", source, str(local))
    remote_manifest = read_kind_manifest(uri, TIERED_DATASET_FORMAT)
    local_manifest = read_kind_manifest(local, TIERED_DATASET_FORMAT)
    assert remote_manifest["tables"] == local_manifest["tables"]
    assert remote_manifest["delta"] == local_manifest["delta"]
    # every part carries the run's token: no other run's part is ever overwritten
    assert {r["path"].split("/")[0] for r in remote_manifest["parts"]} == set(TIERED_TABLES)
    assert all("-" in r["path"].rsplit("/", 1)[1] for r in remote_manifest["parts"])
    # import rebuilds the file byte for byte, as from the local dataset
    _ok("import", uri, str(tmp_path / "back"))
    assert (tmp_path / "back" / "unsealed.bin").read_bytes() == Path(source).read_bytes()
    queries = _tiered_queries(tmp_path)
    assert _tiered_answers(uri, queries) == _tiered_answers(str(local), queries)
    # the library takes the URI as the command line does
    with rmqarrow.open(uri) as store, rmqarrow.open(local) as here:
        assert store.format == "tiered" and store.remote == dataset_location(uri)
        rows = {t: store.scan(t).read_all() for t in TIERED_TABLES}
        assert rows == {t: here.scan(t).read_all() for t in TIERED_TABLES}
        assert store.info().manifest["tables"] == here.info().manifest["tables"]
        assert [v["version"] for v in store.versions()] == [0]
    # asked for the RocksDB index, a tiered dataset on s3:// is refused as on disk
    with pytest.raises(UsageError, match="no RocksDB message index here"):
        rmqarrow.open(uri, index="rocksdb")
    with pytest.raises(UsageError, match="no RocksDB message index here"):
        rmqarrow.open(local, index="rocksdb")


def test_tiered_overwrite_on_s3_is_a_new_version_and_as_of_reads_the_old(
    s3_bucket: str, tmp_path: Path
) -> None:
    uri = f"{s3_bucket}/tiered"
    unsealed, compacted = TIERED.dir / "unsealed.bin", TIERED.dir / "compacted.bin"
    _ok("export", str(unsealed), uri)
    err = call("export", str(compacted), uri).err
    one_error(err, uri, "already there", "--overwrite")
    _ok("export", str(compacted), uri, "--overwrite")
    assert _pin_version(uri, "tiered_files") == 1
    info = json.loads(_ok("info", uri, "--json").out)
    assert [v["version"] for v in info["versions"]] == [0, 1]
    _ok("import", uri, str(tmp_path / "new"))
    assert (tmp_path / "new" / "compacted.bin").read_bytes() == compacted.read_bytes()
    _ok("import", uri, str(tmp_path / "old"), "--as-of", "0")
    assert (tmp_path / "old" / "unsealed.bin").read_bytes() == unsealed.read_bytes()
    # the old version answers as a dataset exported from it alone does
    local = tmp_path / "unsealed-ds"
    _ok("export", str(unsealed), str(local))
    queries = _tiered_queries(tmp_path)
    assert _tiered_answers(uri, queries, "--as-of", "0") == _tiered_answers(str(local), queries)
    with rmqarrow.open(uri, as_of=0) as store:
        assert store.info().manifest["source"]["files"][0]["file_name"] == "unsealed.bin"
    # vacuumed, the old version is refused in one line naming the dataset as given
    _ok("vacuum", uri, "--retention", "0", "--force")
    err = call("import", uri, str(tmp_path / "gone"), "--as-of", "0").err
    one_error(err, f"{uri}: version 0 was vacuumed", "the versions that can be read: 1")


def test_rocksdb_export_to_s3_answers_as_the_local_one(s3_bucket: str, tmp_path: Path) -> None:
    uri, local = f"{s3_bucket}/lake/rocksdb", tmp_path / "rocksdb"
    exported = json.loads(_ok("export", str(BASIC.db), uri, "--json").out)
    assert exported["dataset"] == uri
    _ok("export", str(BASIC.db), str(local))
    remote_manifest = read_kind_manifest(uri, ROCKSDB_DATASET_FORMAT)
    local_manifest = read_kind_manifest(local, ROCKSDB_DATASET_FORMAT)
    assert remote_manifest["tables"] == local_manifest["tables"]
    assert remote_manifest["bookkeeping"] == local_manifest["bookkeeping"]
    assert _rocksdb_out(uri, BASIC) == _rocksdb_out(str(local), BASIC)
    assert _rocksdb_golden(uri, BASIC)
    with rmqarrow.open(uri) as store, rmqarrow.open(local) as here:
        assert store.format == "rocksdb" and store.remote == dataset_location(uri)
        for t in ROCKSDB_TABLES:
            assert store.scan(t).read_all() == here.scan(t).read_all(), t
        assert store.check().ok
    info = json.loads(_ok("info", uri, "--json").out)
    assert info["tables"] == local_manifest["tables"]


def test_rocksdb_overwrite_on_s3_is_a_new_version_and_as_of_reads_the_old(
    s3_bucket: str,
) -> None:
    uri = f"{s3_bucket}/rocksdb"
    _ok("export", str(BASIC.db), uri)
    one_error(call("export", str(EDGE.db), uri).err, "already there")
    # the library's export, as the command line's
    with rmqarrow.open(EDGE.db) as store:
        manifest = store.export(uri, overwrite=True)
    assert manifest["delta"]["version"] == _pin_version(uri, "rocksdb_records") == 1
    assert _rocksdb_golden(uri, EDGE)
    assert _rocksdb_golden(uri, BASIC, as_of=0)
    native = _rocksdb_out(str(BASIC.db), BASIC, "--engine", "native")
    assert _rocksdb_out(uri, BASIC, "--as-of", "0") == native


def test_another_kind_on_s3_is_refused_in_one_line_and_left_as_it_was(s3_bucket: str) -> None:
    tiered, rocksdb = f"{s3_bucket}/tiered", f"{s3_bucket}/rocksdb"
    _ok("export", str(TIERED.dir / "unsealed.bin"), tiered)
    _ok("export", str(BASIC.db), rocksdb)
    index, geometry = f"{s3_bucket}/index", ("--hash-slot-num", "16", "--index-num", "32")
    _ok("export", str(GOLDEN_INDEX.store_dir), index, *geometry)
    before = {uri: sorted(_keys(uri)) for uri in (tiered, rocksdb, index)}
    for source, target, there in (
        (str(BASIC.db), tiered, "(tiered index files)"),
        (str(TIERED.dir / "compacted.bin"), rocksdb, "(a RocksDB message index)"),
        (str(TIERED.dir / "compacted.bin"), index, "(index files)"),
        (str(GOLDEN_INDEX.store_dir), tiered, "(tiered index files)"),
    ):
        more = geometry if source == str(GOLDEN_INDEX.store_dir) else ()
        err = call("export", source, target, "--overwrite", *more).err
        one_error(err, target, "another kind", there)
    assert {uri: sorted(_keys(uri)) for uri in before} == before
    # readers of one kind refuse another kind's dataset on S3 as they do locally
    one_error(call("import", rocksdb, "/nonexistent-out").err, "import takes a dataset")
    one_error(
        call("export", str(GOLDEN_INDEX.store_dir), tiered, "--incremental", *geometry).err,
        "an incremental export",
    )


def _keys(uri: str) -> list[str]:
    """Every object key under ``uri``."""
    from pyarrow import fs as pafs

    fs, root = dataset_location(uri).filesystem()  # type: ignore[union-attr]
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    return [i.path for i in infos if i.type == pafs.FileType.File]
