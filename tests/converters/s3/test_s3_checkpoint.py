"""A dataset on S3 whose tables' logs were checkpointed and cleaned up (delta-rs's
``create_checkpoint`` and ``cleanup_metadata``, against a real S3 server): readers copy
the newest checkpoint at or below the pinned version and the log after it, and read the
same rows as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import one_error, run
from deltalake import DeltaTable
from generated_store import GeneratedStore, build_generated
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.manifest import read_manifest

import rmqarrow
from rmqarrow._paths import ObjectLocation

TABLES = ("entries", "files", "slots")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("gen"), 300)


@pytest.fixture(scope="module")
def smaller(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("small"), 120, seed=3)


def _export(g: GeneratedStore, out: str | Path, **kw: object) -> None:
    export_store(g.store, out, hash_slot_num=g.hash_slot_num, index_num=g.index_num, **kw)  # type: ignore[arg-type]


def _rows(where: str | Path, **kw: object) -> dict[str, int]:
    with rmqarrow.open(where, **kw) as store:  # type: ignore[arg-type]
        return {t: store.scan(t).read_all().num_rows for t in TABLES}


def _log(uri: str, table: str) -> list[str]:
    return [item.name for item in (ObjectLocation(uri) / table / "_delta_log").iterdir()]


def _short_log_retention(uri: str) -> None:
    """Every table's log entries expire at once (a commit of each table's properties):
    a cleanup after the next checkpoint removes every entry before it."""
    for table in TABLES:
        DeltaTable(f"{uri}/{table}").alter.set_table_properties(
            {"delta.logRetentionDuration": "interval 0 seconds"}
        )


def _checkpoint_and_clean_up(uri: str) -> None:
    """Every table checkpointed at its latest version, its older log entries removed."""
    for table in TABLES:
        dt = DeltaTable(f"{uri}/{table}")
        dt.create_checkpoint()
        dt.cleanup_metadata()


def test_a_checkpointed_and_cleaned_up_s3_dataset_reads_as_before(
    generated: GeneratedStore,
    smaller: GeneratedStore,
    s3_bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"{s3_bucket}/ds"
    _export(generated, uri)  # version 0
    _export(smaller, uri, overwrite=True)  # version 1
    _export(generated, tmp_path / "big")
    _export(smaller, tmp_path / "small")
    big, small = _rows(tmp_path / "big"), _rows(tmp_path / "small")
    assert big != small
    # a checkpoint only, the log kept: the older run reads as of its version (the newer
    # checkpoint is not the older run's)
    DeltaTable(f"{uri}/files").create_checkpoint()
    assert _rows(uri, as_of=0) == big
    assert _rows(uri) == small
    _short_log_retention(uri)
    _export(generated, uri, overwrite=True)  # a run: the checkpoints are at its versions
    _checkpoint_and_clean_up(uri)
    for table in TABLES:
        assert f"{0:020d}.json" not in _log(uri, table)  # the early log is gone
        assert any(".checkpoint." in name for name in _log(uri, table))
    assert _rows(uri) == big
    # one more run after the checkpoint: its copy is the checkpoint and the log after it
    _export(smaller, uri, overwrite=True)
    assert _rows(uri) == small
    with rmqarrow.open(uri) as store:
        copied = {
            t: sorted(p.name for p in (store.path / t / "_delta_log").iterdir()) for t in TABLES
        }
        assert read_manifest(store.path)["tables"] == read_manifest(tmp_path / "small")["tables"]
    for names in copied.values():
        assert f"{0:020d}.json" not in names
        assert any(".checkpoint." in name for name in names)
    # import reads it: byte-identical to the import of the local export
    status, _, err = run(capsys, "import", uri, str(tmp_path / "from-s3"))
    assert status == 0, err
    status, _, err = run(capsys, "import", str(tmp_path / "small"), str(tmp_path / "from-disk"))
    assert status == 0, err
    for path in (tmp_path / "from-disk").iterdir():
        assert (tmp_path / "from-s3" / path.name).read_bytes() == path.read_bytes(), path.name
    # a run whose log was cleaned up is refused in one line
    status, _, err = run(capsys, "sql", uri, "SELECT 1", "--as-of", "0")
    assert status == 1
    one_error(err, uri)
