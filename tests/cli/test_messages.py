"""Library messages name the parameters of the call (``py_files=``, ``engines=``); the
command line prints them as its own options (``--py-files``, ``--engines``), and neither
speaks the other's terms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_run import one_error, run
from golden_data import golden_set
from legacy_dataset import legacy_export
from rmqarrow.converters.parquet.to_delta import convert_to_delta
from rmqarrow.converters.spark.session import check_master, configure

from rmqarrow.engines import parse_engines
from rmqarrow.errors import DatasetError, StoreNotFoundError, UsageError
from rmqarrow.format.detect import MANIFEST_NAME


def test_the_library_names_the_parameter(tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    with pytest.raises(StoreNotFoundError) as caught:
        configure(py_files=[str(missing)])
    assert str(caught.value).startswith(f"py_files={missing}: no such file")
    assert "--" not in str(caught.value)

    with pytest.raises(UsageError) as caught_master:
        check_master("nowhere")
    assert str(caught_master.value).startswith("master='nowhere': not a Spark master URL")

    with pytest.raises(UsageError) as caught_engines:
        parse_engines("native,oracle")
    assert str(caught_engines.value).startswith("engines=native,oracle: unknown oracle;")


@pytest.mark.parametrize(
    "command",
    [
        ["query", "STORE", "--topic", "T", "--key", "K", "--engine", "spark"],
        ["build", "STORE", "--from-commitlog", "LOG", "--engine", "spark"],
        ["stats", "STORE", "--engine", "spark"],
    ],
)
def test_the_cli_prints_the_parameter_as_its_option(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.py"
    status, _, err = run(capsys, *command, "--py-files", str(missing))
    assert status == 1
    one_error(err, f"rmqarrow {command[0]}: error: --py-files {missing}: no such file")
    assert "py_files=" not in err


def test_the_cli_prints_a_value_after_its_option(capsys: pytest.CaptureFixture[str]) -> None:
    store = golden_set("basic").store_dir
    status, _, err = run(capsys, "verify", str(store), "--engines", "native,oracle")
    assert status == 2
    one_error(err, "--engines native,oracle: unknown oracle;")
    assert "engines=" not in err


def test_convert_prints_export_s_overwrite_as_its_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = golden_set("basic")
    ds = tmp_path / "ds"
    manifest = legacy_export(g.store_dir, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    manifest.pop("parts")  # an export older than parts lists
    (ds / MANIFEST_NAME).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        convert_to_delta(ds)
    assert "export it whole again (overwrite=True), then convert" in str(caught.value)
    status, _, err = run(capsys, "convert", str(ds))
    assert status == 1
    one_error(err, "export it whole again (--overwrite), then convert")


def test_the_cli_names_the_command_where_the_library_names_its_method(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiered_golden_data import ALL_TIERED

    store = golden_set("basic").store_dir
    status, _, err = run(capsys, "import", str(store), str(tmp_path / "out"))
    assert status == 2
    one_error(err, "import is not available for")
    assert "import_files" not in err

    status, _, err = run(capsys, "convert", str(store))
    assert status == 2
    one_error(err, "convert is not available for")
    assert "convert_to_delta" not in err
    assert "(or export())" not in err and "`rmqarrow export` (or" not in err

    dataset = tmp_path / "tiered"
    status, _, _ = run(capsys, "export", str(ALL_TIERED[0].dir / "compacted.bin"), str(dataset))
    assert status == 0
    status, _, err = run(capsys, "check", str(dataset))
    assert status == 2
    one_error(err, "(`rmqarrow import` rebuilds them)")
    assert "import_files" not in err


def test_an_unknown_engine_is_refused_with_the_engines_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = golden_set("basic").store_dir
    status, _, err = run(capsys, "query", str(store), "--key", "K", "--engine", "oracle")
    assert status == 2
    one_error(err, "invalid choice: 'oracle' (choose from 'native', 'duckdb', 'spark')")


def test_a_path_no_format_reads_is_refused_in_the_command_s_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "keys.txt"
    text.write_text("TopicA#k1\n", encoding="utf-8")
    status, _, err = run(capsys, "info", str(text))
    assert status == 2
    # what it takes is every registered format, RocksDB's index included
    one_error(err, "not an index file (", "; rmqarrow takes a broker store root, or the files")
    one_error(err, "RocketMQ's IndexFile", "tiered IndexStoreFile", "RocksDB message index")
    assert "rmqarrow.open" not in err


def test_a_tiered_key_without_a_topic_names_the_parameters_then_the_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiered_golden_data import ALL_TIERED

    import rmqarrow
    from rmqarrow.tiered.store import read_tiered_queries

    compacted = ALL_TIERED[0].dir / "compacted.bin"
    with rmqarrow.open(compacted) as store, pytest.raises(UsageError) as caught:
        store.lookup("k1")
    assert "(or topic= with key=); got 'k1'" in str(caught.value)
    queries = tmp_path / "q.tsv"
    queries.write_text("k1\t8\t0\t100\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught_file:
        read_tiered_queries(queries)
    assert "(or topic= with key=); got 'k1'" in str(caught_file.value)
    status, _, err = run(capsys, "query", str(compacted), "--key", "k1")
    assert status == 2
    one_error(err, "(or --topic with --key); got 'k1'")


def test_refusals_say_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = Path(__file__).parents[1] / "golden" / "basic"
    status, _, err = run(capsys, "query", str(golden), "--key", "a#b", "--exact")
    assert status == 2
    one_error(err, "--exact is for the tiered index", "bounded by --max-num alone: raise it")
    dataset, out = tmp_path / "ds", tmp_path / "out"
    assert run(capsys, "export", str(golden), str(dataset))[0] == 0
    assert run(capsys, "import", str(dataset), str(out))[0] == 0
    status, _, err = run(capsys, "import", str(dataset), str(out))
    assert status == 1
    one_error(err, "already holds 00000, 00001", "import into a new folder, or move those")


def test_a_dataset_of_another_format_than_the_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # it would answer its own format's nothing for a key the store holds: 0, exit 0
    golden = Path(__file__).parents[1] / "golden"
    tiered = golden / "tiered" / "tiered_basic" / "compacted.bin"
    assert run(capsys, "export", str(tiered), str(tmp_path / "tds"))[0] == 0
    assert run(capsys, "export", str(golden / "basic"), str(tmp_path / "ds"))[0] == 0
    args = ["query", str(golden / "basic"), "--key", "a#b", "--engine", "duckdb"]
    status, _, err = run(capsys, *args, "--dataset", str(tmp_path / "tds"))
    assert status == 2
    one_error(err, "a dataset of the tiered format, but", "holds the index format; pass the")
    status, out, _ = run(capsys, *args, "--dataset", str(tmp_path / "ds"))
    assert status == 0 and "0 offsets for 'a#b'" in out
