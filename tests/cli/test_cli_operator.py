"""The command line as an operator uses it after a crash.

Every failure: the exit status, one line on stderr, no traceback.  No tracebacks, no
silent success on the wrong input, no wrong advice, a damaged file does not stop the
store, numbers and times paste back, no litter; plus the user mistakes tried beyond them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_run import call, one_error, run
from generated_store import GeneratedStore, build_generated

from rmqarrow.cli import main
from rmqarrow.format.layout import ENTRY_DTYPE, HEADER_DTYPE, Geometry
from rmqarrow.format.naming import list_index_files
from rmqarrow.format.queries import Query


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> GeneratedStore:
    return build_generated(tmp_path_factory.mktemp("op") / "gen")


@pytest.fixture(scope="module")
def broker(gen: GeneratedStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker store root: index/, commitlog/, checkpoint, abort."""
    root = tmp_path_factory.mktemp("broker") / "store"
    root.mkdir()
    shutil.copytree(gen.store, root / "index")
    shutil.copytree(gen.root / "commitlog", root / "commitlog")
    (root / "checkpoint").write_bytes(b"\0" * 4096)
    (root / "abort").write_bytes(b"")
    return root


@pytest.fixture(scope="module")
def dataset(gen: GeneratedStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "dataset"
    assert main(["export", str(gen.store), str(out)]) == 0
    return out


def copy_store(gen: GeneratedStore, to: Path) -> Path:
    shutil.copytree(gen.store, to)
    return to


def key_queries(gen: GeneratedStore, n: int = 300) -> list[Query]:
    rng = np.random.default_rng(5)
    keys = [gen.keys[i] for i in rng.choice(len(gen.keys), size=n, replace=False)]
    return [Query(k, 64) for k in keys]


# -- no traceback ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["missing", "directory", "parquet", "binary", "empty"])
def test_query_queries_file_of_the_wrong_kind(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "q"
    if kind == "directory":
        path.mkdir()
    elif kind == "parquet":
        pq.write_table(pa.table({"a": [1]}), path)
    elif kind == "binary":
        path.write_bytes(b"\x00\x01\x02" * 10)
    elif kind == "empty":
        path.write_text("\n")
    status, out, err = run(capsys, "query", str(gen.store), "--queries", str(path))
    assert status == (1 if kind in ("missing", "empty") else 2)
    one_error(err, str(path))
    assert out == ""


@pytest.mark.parametrize("option", ["--keys", "--queries"])
@pytest.mark.parametrize("kind", ["missing", "directory", "parquet"])
def test_verify_keys_and_queries_of_the_wrong_kind(
    capsys: pytest.CaptureFixture[str],
    gen: GeneratedStore,
    tmp_path: Path,
    option: str,
    kind: str,
) -> None:
    path = tmp_path / "k"
    if kind == "directory":
        path.mkdir()
    elif kind == "parquet":
        pq.write_table(pa.table({"a": [1]}), path)
    status, _, err = run(capsys, "verify", str(gen.store), "--engines", "native", option, str(path))
    assert status in (1, 2)
    one_error(err, str(path))


@pytest.mark.parametrize("bad", ["iso_time", "text_number"])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_build_from_bad_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: str, fmt: str
) -> None:
    rows = {
        "topic": ["T", "T"],
        "keys": ["a", "b"],
        "commit_log_offset": ["1", "2"],
        "store_timestamp": ["1768467602471", "1768467602472"],
    }
    if bad == "iso_time":
        rows["store_timestamp"][1] = "2026-01-15T10:00:00"
    else:
        rows["commit_log_offset"][1] = "abc"
    source = tmp_path / f"in.{fmt}"
    if fmt == "csv":
        source.write_text(
            "topic,keys,commit_log_offset,store_timestamp\n"
            + "".join(",".join(r) + "\n" for r in zip(*rows.values(), strict=True))
        )
    else:
        pq.write_table(pa.table(rows), source)
    status, _, err = run(capsys, "build", str(tmp_path / "out"), "--from", str(source))
    assert status == 1
    one_error(err, str(source))


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["query"], ["nope"], ["query", "x", "--key", "a", "--max-num", "many"]):
        status, _, err = run(capsys, *argv)
        assert status == 2
        assert err.count("\n") == 1 and "error:" in err


def test_unexpected_error_is_one_line_and_debug_shows_traceback(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last-resort handler: an exception rmqarrow did not classify (a bug) is one line
    asking for --debug; --debug prints the traceback."""
    import rmqarrow.cli._query as query_cli

    def broken(_args: object) -> int:
        raise KeyError("slot")

    monkeypatch.setattr(query_cli, "cmd_query", broken)
    status = main(["query", str(gen.store), "--key", "orders#x"])
    err = capsys.readouterr().err
    assert status == 1 and "Traceback" not in err
    one_error(err, "unexpected KeyError", "this is a bug", "--debug")
    assert main(["query", str(gen.store), "--key", "orders#x", "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError" in err


def test_debug_env_prints_the_traceback(gen: GeneratedStore, tmp_path: Path) -> None:
    argv = ("query", str(tmp_path / "none"), "--key", "a")
    proc = call(*argv, env={"RMQARROW_DEBUG": "1"})
    assert proc.status == 1
    assert "Traceback" in proc.err and "no such store directory" in proc.err
    proc = call(*argv, env={"RMQARROW_DEBUG": None})
    assert proc.status == 1 and "Traceback" not in proc.err
    assert proc.err.count("\n") == 1


def test_spark_gateway_exit_names_the_cause_and_the_log(broker: Path, tmp_path: Path) -> None:
    """A JVM that dies at start: Spark's first line, the JVM's own error and the log path."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-version" ]; then echo \'openjdk version "17.0.2"\' >&2; exit 0; fi\n'
        "echo 'Error: Could not reserve enough space for object heap' >&2\nexit 1\n"
    )
    java.chmod(0o755)
    # a process of its own: Spark keeps one session a process, and this one may hold a
    # working session already (the spark tests'), which would never start the fake java
    env = {**os.environ, "JAVA_HOME": str(java.parent.parent)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "sql",
            "--engine",
            "spark",
            str(broker / "index"),
            "SELECT 1",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1
    line = one_error(
        proc.stderr, "JAVA_GATEWAY_EXITED", "Could not reserve enough space", "Spark's log: "
    )
    log = Path(line.rsplit("Spark's log: ", 1)[1].strip())
    assert log.is_file()  # kept, because it explains the failure
    log.unlink()


def test_bad_master_url_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore
) -> None:
    status, _, err = run(
        capsys,
        "query",
        str(gen.store),
        "--engine",
        "spark",
        "--master",
        "localhost:7077",
        "--key",
        "orders#x",
    )
    assert status == 2
    one_error(err, "not a Spark master URL")


# -- silent success on the wrong input ----------------------------------------------------------


def test_build_from_commitlog_store_root_uses_its_commitlog(
    capsys: pytest.CaptureFixture[str], broker: Path, tmp_path: Path
) -> None:
    status, out, err = run(
        capsys,
        "build",
        str(tmp_path / "idx"),
        "--from-commitlog",
        str(broker),
        "--json",
        "--hash-slot-num",
        "122",
        "--index-num",
        "488",
    )
    assert status == 0 and json.loads(out)["records"] > 1000
    assert err.count("broker store root") == 1 and "commitlog" in err


def test_build_from_empty_commitlog_dir_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "commitlog").mkdir()
    status, _, err = run(
        capsys, "build", str(tmp_path / "idx"), "--from-commitlog", str(tmp_path / "commitlog")
    )
    assert status == 2
    one_error(err, "no CommitLog files")
    assert not (tmp_path / "idx").exists()


def test_stats_commitlog_store_root(capsys: pytest.CaptureFixture[str], broker: Path) -> None:
    status, out, _ = run(
        capsys, "stats", str(broker / "index"), "--commitlog", str(broker), "--json"
    )
    assert status == 0
    check = json.loads(out)["log_check"]
    assert check["dangling"] == 0


@pytest.mark.parametrize("command", ["query", "export", "info", "check"])
def test_empty_directory_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = {
        "query": ["query", str(empty), "--key", "T#k"],
        "export": ["export", str(empty), str(tmp_path / "out")],
        "info": ["info", str(empty)],
        "check": ["check", str(empty)],
    }[command]
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    one_error(err, "empty directory")
    assert not (tmp_path / "out").exists()


def test_key_without_topic_gets_a_hint(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore
) -> None:
    status, out, err = run(capsys, "query", str(gen.store), "--key", "ORD-000001")
    assert status == 0 and "0 offsets" in out
    assert "--topic" in err and "hint:" in err
    status, out, err = run(
        capsys, "query", str(gen.store), "--topic", "orders", "--key", "ORD-000001"
    )
    assert status == 0 and "hint" not in err and "0 offsets" not in out
    status, out, err = run(
        capsys, "query", str(gen.store), "--topic", "orders", "--key", "orders#ORD-000001"
    )
    assert status == 0 and "0 offsets" in out and "already holds a '#'" in err


# -- say what the input is ----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["info", "query", "export", "check"])
@pytest.mark.parametrize("kind", ["dataset", "commitlog", "text", "tiered"])
def test_wrong_kind_of_input_names_it(
    capsys: pytest.CaptureFixture[str],
    gen: GeneratedStore,
    dataset: Path,
    tmp_path: Path,
    command: str,
    kind: str,
) -> None:
    if kind == "dataset":
        target, needle = dataset, "Parquet dataset"
    elif kind == "commitlog":
        target, needle = gen.root / "commitlog", "CommitLog directory"
    elif kind == "text":
        target, needle = tmp_path / "notes.txt", "not an index file"
        target.write_text("hello\n" * 100)
    else:  # a tiered file (its magic) whose geometry its size cannot tell
        target, needle = tmp_path / "tiered", "geometry of this 1004-byte file"
        target.write_bytes((-1127939447).to_bytes(4, "big", signed=True) + b"\0" * 1000)
    argv = {
        "info": ["info", str(target)],
        "query": ["query", str(target), "--key", "T#k"],
        "export": ["export", str(target), str(tmp_path / "out")],
        "check": ["check", str(target)],
    }[command]
    status, out, err = run(capsys, *argv)
    if kind == "dataset" and command == "info":  # info answers for every kind open opens
        assert status == 0 and "layout" in out and "source" in out, err
        return
    if kind == "dataset" and command == "check":  # its parts against its manifest
        assert (status, out) == (0, "the dataset matches its manifest\n"), err
        return
    if kind == "tiered" and command == "check":  # check reports it as a problem file
        assert status == 1 and needle in out and "Traceback" not in err
        return
    assert status == 2
    one_error(err, str(target), needle)


def test_broker_root_is_read_through_its_index(
    capsys: pytest.CaptureFixture[str], broker: Path, gen: GeneratedStore
) -> None:
    key = gen.keys[1]
    status, out, err = run(capsys, "query", str(broker), "--key", key, "--json")
    status2, out2, _ = run(capsys, "query", str(gen.store), "--key", key, "--json")
    assert status == status2 == 0 and json.loads(out) == json.loads(out2)
    assert err.count("broker store root") == 1
    status, out, err = run(capsys, "info", str(broker))
    assert status == 0 and "8 files" in out


# -- damaged stores still answer ----------------------------------------------------------------


def test_truncated_newest_file_answers_as_the_store_without_it(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    damaged = copy_store(gen, tmp_path / "damaged")
    without = copy_store(gen, tmp_path / "without")
    newest = list_index_files(damaged)[-1]
    with open(newest, "r+b") as fh:  # what a crash leaves: the tail of the file missing
        fh.truncate(newest.stat().st_size // 2)
    (without / newest.name).unlink()
    queries = key_queries(gen)
    tsv = tmp_path / "q.tsv"
    tsv.write_text("".join(f"{q.key}\t{q.max_num}\n" for q in queries))
    status, out, err = run(capsys, "query", str(damaged), "--queries", str(tsv), "--json")
    status2, out2, err2 = run(capsys, "query", str(without), "--queries", str(tsv), "--json")
    assert status == status2 == 0
    assert json.loads(out) == json.loads(out2)
    assert any(a["phy_offsets"] for a in json.loads(out)["answers"])
    assert newest.name in err and "truncated" in err and newest.name not in err2
    # single keys too, and verify, which uses the healthy files and names the skipped one
    for q in queries[:20]:
        assert (
            run(capsys, "query", str(damaged), "--key", q.key, "--json")[1]
            == run(capsys, "query", str(without), "--key", q.key, "--json")[1]
        )
    status, out, err = run(
        capsys, "verify", str(damaged), "--engines", "native", "--sample", "50", "--json"
    )
    assert status == 0 and newest.name in err


def test_info_lists_every_file_with_its_status(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    store = copy_store(gen, tmp_path / "s")
    files = list_index_files(store)
    with open(files[-1], "r+b") as fh:
        fh.truncate(5000)
    header = np.zeros(1, HEADER_DTYPE)
    header["index_count"] = 10**6  # more than the geometry holds
    with open(files[2], "r+b") as fh:
        fh.write(header.tobytes())
    status, out, err = run(capsys, "info", str(store))
    assert status == 1
    lines = {line.split()[0]: line for line in out.splitlines() if line[:1].isdigit()}
    assert "truncated" in lines[files[-1].name] and "bad header" in lines[files[2].name]
    assert all(" ok " in lines[f.name] for f in files[:2] + files[3:-1])
    assert f"2 of {len(files)} files damaged:\n- query, export and verify skip the 2" in out
    status, out, err = run(capsys, "info", str(store), "--json")
    assert status == 1
    infos = json.loads(out)["files"]
    assert [i["status"] for i in infos].count("ok") == len(files) - 2
    assert [i["skipped_by_readers"] for i in infos].count(True) == 2
    status, _, err = run(capsys, "query", str(store), "--key", gen.keys[0], "--strict")
    assert status == 1
    one_error(err, "--strict", files[-1].name, files[2].name)
    status, _, err = run(capsys, "export", str(store), str(tmp_path / "x"), "--strict")
    assert status == 1 and not (tmp_path / "x").exists()
    one_error(err, "--strict")


def test_geometry_is_fitted_from_healthy_files(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    """The newest file cut to a size that itself fits the 1:4 ratio must not decide."""
    store = copy_store(gen, tmp_path / "s")
    newest = list_index_files(store)[-1]
    with open(newest, "r+b") as fh:
        fh.truncate(Geometry(10, 40).file_size)
    status, out, err = run(capsys, "query", str(store), "--key", gen.keys[1], "--json")
    assert status == 0 and json.loads(out)["phy_offsets"]
    assert "122 slots x 488" in err and newest.name in err


def test_check_reports_chain_damage_and_dangling_offsets(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    store = copy_store(gen, tmp_path / "s")
    status, out, _ = run(capsys, "check", str(store), "--commitlog", str(gen.root / "commitlog"))
    assert status == 0 and "healthy" in out
    files = list_index_files(store)
    g = Geometry(gen.hash_slot_num, gen.index_num)
    with open(files[1], "r+b") as fh:  # position 5 points forward to position 9
        fh.seek(g.entries_offset + 5 * ENTRY_DTYPE.itemsize + 16)
        fh.write((9).to_bytes(4, "big"))
    with open(files[3], "r+b") as fh:  # position 7's offset is where no message starts
        fh.seek(g.entries_offset + 7 * ENTRY_DTYPE.itemsize + 4)
        fh.write((3).to_bytes(8, "big"))
    status, out, _ = run(capsys, "check", str(store), "--commitlog", str(gen.root / "commitlog"))
    assert status == 1
    assert f"damaged: {files[1]}: damaged chains" in out and "forward links" in out
    assert f"damaged: {files[3]}: dangling offsets" in out
    assert f"2 of {len(files)} files damaged:\n- query and export still read the 2" in out
    status, out, err = run(capsys, "query", str(store), "--key", gen.keys[1], "--strict")
    assert status == 0 and files[1].name not in err  # as said: it does not see chain damage
    status, out, _ = run(capsys, "check", str(store), "--json")
    doc = json.loads(out)
    assert not doc["ok"] and doc["files"][1]["chains"]["forward_links"] == 1
    assert not any(fh["skipped_by_readers"] for fh in doc["files"])


def test_explain_says_why(capsys: pytest.CaptureFixture[str], gen: GeneratedStore) -> None:
    key = gen.keys[1]
    status, out, _ = run(capsys, "query", str(gen.store), "--key", key, "--explain")
    assert status == 0 and "explain:" in out
    assert "offsets from" in out or "slot" in out
    # a window before every file: each file skipped by its time span
    status, out, _ = run(
        capsys, "query", str(gen.store), "--key", key, "--explain", "--end", "2000-01-01T00:00:00Z"
    )
    assert status == 0 and "0 offsets" in out and "skipped: it holds" in out
    # max_num 1 on a key with several offsets: the cap is said
    many = next(
        k
        for k in gen.keys[:400]
        if len(
            json.loads(run(capsys, "query", str(gen.store), "--key", k, "--json")[1])["phy_offsets"]
        )
        >= 2
    )
    status, out, _ = run(
        capsys, "query", str(gen.store), "--key", many, "--explain", "--max-num", "1"
    )
    assert status == 0 and "max_num 1 reached" in out
    status, out, _ = run(
        capsys,
        "query",
        str(gen.store),
        "--key",
        key,
        "--explain",
        "--resolve",
        str(gen.root / "commitlog"),
    )
    assert status == 0 and "collision" in out


# -- numbers and times --------------------------------------------------------------------------


def test_numbers_paste_back(capsys: pytest.CaptureFixture[str], gen: GeneratedStore) -> None:
    status, out, _ = run(capsys, "info", str(gen.store))
    assert status == 0
    row = next(line for line in out.splitlines() if line[:1].isdigit()).split()
    assert all("," not in cell for cell in row)
    big = [int(c) for c in row if c.isdigit() and int(c) > 10**5]
    assert big  # the offsets, as plain integers
    status, out, _ = run(
        capsys, "sql", str(gen.store), "SELECT store_timestamp, key_hash FROM entries LIMIT 1"
    )
    value = out.splitlines()[-1].split()[0]
    assert value.isdigit() and int(value) > 10**12
    # paste it back into --begin
    status, out, _ = run(capsys, "query", str(gen.store), "--key", gen.keys[1], "--begin", value)
    assert status == 0 and "offsets for" in out


def test_times_iso_and_seconds(capsys: pytest.CaptureFixture[str], gen: GeneratedStore) -> None:
    key = gen.keys[1]
    ms = run(
        capsys,
        "query",
        str(gen.store),
        "--key",
        key,
        "--json",
        "--begin",
        "1768467600000",
        "--end",
        "1768471200000",
    )[1]
    iso = run(
        capsys,
        "query",
        str(gen.store),
        "--key",
        key,
        "--json",
        "--begin",
        "2026-01-15T09:00:00Z",
        "--end",
        "2026-01-15T10:00:00+00:00",
    )[1]
    assert json.loads(ms) == json.loads(iso)
    for argv in (
        ["query", str(gen.store), "--key", key, "--begin", "1768467600"],
        ["stats", str(gen.store), "--between", "1768467600", "1768471200"],
        [
            "build",
            "x",
            "--from-commitlog",
            str(gen.root / "commitlog"),
            "--start-timestamp",
            "1768467600",
        ],
    ):
        status, _, err = run(capsys, *argv)
        assert status == 2
        one_error(err, "epoch seconds", "1768467600000")
    status, _, err = run(
        capsys, "query", str(gen.store), "--key", key, "--begin", "1,768,467,600,000"
    )
    assert status == 2
    one_error(err, "thousands separators")
    status, _, err = run(capsys, "query", str(gen.store), "--key", key, "--begin", "yesterday")
    assert status == 2
    one_error(err, "ISO 8601")


def test_queries_file_header_and_short_lines(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    k1, k2 = gen.keys[1], gen.keys[2]
    tsv = tmp_path / "q.tsv"
    tsv.write_text(f"key\tmax_num\tbegin\tend\n{k1}\n{k2}\t1\n{k1}\t\t2026-01-15T09:00:00Z\n")
    status, out, _ = run(capsys, "query", str(gen.store), "--queries", str(tsv))
    assert status == 0
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == [k1, k2, k1]
    assert len(lines[1].split("\t")[1].split(",")) == 1
    single = json.loads(run(capsys, "query", str(gen.store), "--key", k1, "--json")[1])
    assert lines[0].split("\t")[1] == ",".join(str(o) for o in single["phy_offsets"])
    tsv.write_text(f"{k1}\t1\t2\t3\t4\n")
    status, _, err = run(capsys, "query", str(gen.store), "--queries", str(tsv))
    assert status == 1
    one_error(err, f"{tsv}:1", "1 to 4")


# -- litter --------------------------------------------------------------------------------------


def test_failed_demo_removes_what_it_created(tmp_path: Path) -> None:
    """The demo dies when Spark's JVM cannot start: its output directory is gone."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(
        '#!/bin/sh\nif [ "$1" = "-version" ]; then '
        "echo 'openjdk version \"17.0.2\"' >&2; exit 0; fi\nexit 1\n"
    )
    java.chmod(0o755)
    # a process of its own: Spark keeps one session a process, and this one may hold a
    # working session already (the spark tests'), which would never start the fake java
    env = {**os.environ, "JAVA_HOME": str(java.parent.parent)}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    out = tmp_path / "demo"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "demo",
            "--size",
            "small",
            "--engines",
            "native,spark",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    one_error(proc.stderr, "Spark")
    assert not out.exists()
    log = proc.stderr.rsplit("Spark's log: ", 1)
    if len(log) == 2:
        Path(log[1].strip()).unlink(missing_ok=True)
    # an existing empty --out directory is kept, and left empty
    out.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "demo",
            "--size",
            "small",
            "--engines",
            "native,spark",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 1 and out.is_dir() and not any(out.iterdir())
    log = proc.stderr.rsplit("Spark's log: ", 1)
    if len(log) == 2:
        Path(log[1].strip()).unlink(missing_ok=True)


def test_bad_demo_size_creates_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, "demo", "--size", "huge", "--out", str(tmp_path / "d"))
    assert status == 2
    one_error(err, "demo size")
    assert not (tmp_path / "d").exists()


# -- mistakes beyond the list -------------------------------------------------------------


def test_more_operator_mistakes(
    capsys: pytest.CaptureFixture[str],
    gen: GeneratedStore,
    broker: Path,
    dataset: Path,
    tmp_path: Path,
) -> None:
    damaged = copy_store(gen, tmp_path / "damaged")
    newest = list_index_files(damaged)[-1]
    with open(newest, "r+b") as fh:
        fh.truncate(1000)
    key = gen.keys[1]
    cases = [
        (
            ["query", str(gen.store), "--key", key, "--begin", "2026-01-16", "--end", "2026-01-15"],
            2,
            "is after --end",
        ),
        (["query", str(damaged), "--engine", "duckdb", "--key", key], 2, "use --engine native"),
        (
            ["build", str(broker), "--from-commitlog", str(broker)],
            2,
            "build into its index directory",
        ),
        (
            ["verify", str(gen.store), "--dataset", str(gen.store), "--engines", "native"],
            2,
            "not an exported dataset",
        ),
        (["verify", str(dataset), "--engines", "native"], 2, "needs the native store"),
        (["import", str(gen.store), str(tmp_path / "out")], 2, "import takes a dataset"),
        (["info", str(gen.root / "commitlog" / ("0" * 20))], 2, "a CommitLog file"),
        (
            ["query", str(gen.store), "--key", key, "--resolve", str(gen.store)],
            2,
            "index files, not a CommitLog",
        ),
        (
            ["query", str(gen.store), "--key", key, "--explain", "--engine", "duckdb"],
            2,
            "--explain",
        ),
        (["stats", str(gen.root / "commitlog")], 2, "CommitLog directory"),
        (["sql", str(broker / "checkpoint"), "SELECT 1"], 2, "not an index file"),
    ]
    for argv, status, needle in cases:
        got, _, err = run(capsys, *argv)
        assert got == status, (argv, err)
        one_error(err, needle)
    assert not (tmp_path / "out").exists()


def test_export_of_a_damaged_store_names_the_file(
    capsys: pytest.CaptureFixture[str], gen: GeneratedStore, tmp_path: Path
) -> None:
    """Export leaves a damaged file out and names it; the dataset holds exactly the healthy
    files (they import back byte-identical); --strict refuses and writes nothing."""
    store = copy_store(gen, tmp_path / "s")
    newest = list_index_files(store)[-1]
    with open(newest, "r+b") as fh:
        fh.truncate(3000)
    status, _, err = run(capsys, "export", str(store), str(tmp_path / "strict"), "--strict")
    assert status == 1 and not (tmp_path / "strict").exists()
    one_error(err, newest.name)
    status, _, err = run(capsys, "export", str(store), str(tmp_path / "out"))
    assert status == 0 and newest.name in err and "truncated" in err
    assert "Traceback" not in err
    status, _, _ = run(capsys, "import", str(tmp_path / "out"), str(tmp_path / "back"))
    assert status == 0
    healthy = {p.name: p.read_bytes() for p in list_index_files(store)[:-1]}
    assert {p.name: p.read_bytes() for p in (tmp_path / "back").iterdir()} == healthy
