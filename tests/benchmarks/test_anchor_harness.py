"""The RocketMQ side-by-side harness (benchmarks/bench_anchor.py): its refusals, each one
clear line, and, given a RocketMQ checkout in ``$ROCKETMQ_SRC``, a small real run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_anchor.py"
INDEX_FILE = "store/src/main/java/org/apache/rocketmq/store/index/IndexFile.java"
NEEDED = (
    INDEX_FILE,
    "store/src/main/java/org/apache/rocketmq/store/index/IndexHeader.java",
    "store/src/main/java/org/apache/rocketmq/store/ReferenceResource.java",
    "common/src/main/java/org/apache/rocketmq/common/constant/LoggerName.java",
)


def harness(
    tmp_path: Path, *args: str, path: str | None = None, rocketmq_src: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROCKETMQ_SRC"}
    if rocketmq_src is not None:
        env["ROCKETMQ_SRC"] = rocketmq_src
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--build-dir",
            str(tmp_path / "build"),
            "--results-dir",
            str(tmp_path / "results"),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def one_line_refusal(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("bench-anchor: ")
    return lines[0]


def fake_checkout(root: Path, files: tuple[str, ...], text: str) -> Path:
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_no_checkout_given_says_how_to_give_one(tmp_path: Path) -> None:
    line = one_line_refusal(harness(tmp_path, "--rocketmq", ""))
    assert "no RocketMQ checkout given" in line
    assert "ROCKETMQ=/path/to/rocketmq" in line
    assert not (tmp_path / "build").exists() and not (tmp_path / "results").exists()


def test_checkout_from_the_environment_is_used_when_no_option(tmp_path: Path) -> None:
    line = one_line_refusal(harness(tmp_path, rocketmq_src=str(tmp_path / "nowhere")))
    assert f"ROCKETMQ={tmp_path / 'nowhere'}: no such folder" in line


def test_folder_without_index_file_is_not_a_checkout(tmp_path: Path) -> None:
    other = fake_checkout(tmp_path / "not-rocketmq", NEEDED[1:], "class X {}\n")
    (other / "pom.xml").write_text("<project/>\n")
    line = one_line_refusal(harness(tmp_path, "--rocketmq", str(other)))
    assert "is not a RocketMQ checkout" in line
    assert INDEX_FILE in line


def test_index_file_without_what_it_needs_names_the_missing_file(tmp_path: Path) -> None:
    partial = fake_checkout(tmp_path / "partial", NEEDED[:1], "class X {}\n")
    line = one_line_refusal(harness(tmp_path, "--rocketmq", str(partial)))
    assert NEEDED[1] in line


def test_no_javac_on_path(tmp_path: Path) -> None:
    checkout = fake_checkout(tmp_path / "rocketmq", NEEDED, "class X {}\n")
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    line = one_line_refusal(harness(tmp_path, "--rocketmq", str(checkout), path=str(empty_path)))
    assert "javac not found on PATH" in line
    assert "JDK 17" in line


def test_sources_that_do_not_compile_point_at_the_javac_log(tmp_path: Path) -> None:
    # Needs the JDK the project's set-up asks for (javac 17).
    checkout = fake_checkout(tmp_path / "rocketmq", NEEDED, "this is not Java\n")
    line = one_line_refusal(harness(tmp_path, "--rocketmq", str(checkout)))
    assert "javac could not compile RocketMQ's IndexFile" in line
    log = tmp_path / "build" / "javac.log"
    assert str(log) in line
    assert "error" in log.read_text()


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("ROCKETMQ_SRC"),
    reason="optional external input: set ROCKETMQ_SRC to a RocketMQ checkout",
)
def test_small_real_run_matches_rocketmq_byte_for_byte(tmp_path: Path) -> None:
    proc = harness(
        tmp_path,
        "--n",
        "30000",
        "--lookups",
        "3000",
        "--slots",
        "7000",
        "--entries",
        "30001",
        "--repeats",
        "2",
        "--warmup-keys",
        "3000",
        "--warmup-rounds",
        "2",
        "--java-opts=-Xmx512m",
        "--workdir",
        str(tmp_path / "work"),
        rocketmq_src=os.environ["ROCKETMQ_SRC"],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "RocketMQ Java" in out and "rmqarrow" in out and "Java / rmqarrow" in out
    assert "index files byte-identical 2/2" in out
    assert "answers equal 2/2 (3,000 queries" in out
    assert "every query found its key 2/2" in out
    records = list((tmp_path / "results").glob("anchor-*.json"))
    assert len(records) == 1
    text = records[0].read_text()
    assert str(Path(os.environ["ROCKETMQ_SRC"]).resolve()) not in text
    record = json.loads(text)
    assert record["ok"] is True
    assert record["load_at_start"]["1m"] >= 0 and record["machine"]["cpus"] >= 1
    assert len(record["rocketmq"]["sources"]) == 4
    (result,) = record["results"]
    assert result["n"] == 30_000 and result["file_size"] == 40 + 7000 * 4 + 30001 * 20
    for run in result["runs"]:
        assert run["files"]["identical"] and run["answers"]["equal"]
        assert run["java"]["stored"] == run["rmqarrow"]["stored"] == 30_000
        for side in ("java", "rmqarrow"):
            assert run[side]["build_wall_s"] > 0 and run[side]["lookup_cpu_s"] >= 0
    ratio = result["summary"]["build_wall_s"]["java_over_rmqarrow"]["median"]
    assert ratio > 0
    # The run's files are gone; only the record stays.
    assert list((tmp_path / "work").iterdir()) == []
