"""The RocketMQ side-by-side harness (benchmarks/bench_anchor.py): its refusals, each one
clear line; small real runs of released rocketmq-store jars' IndexFile (Maven fetches them
into the harness's cache on first use); and a small real run of IndexFile compiled from a
checkout (``$ROCKETMQ_SRC``, else the newest release's published sources)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_anchor.py"
if str(SCRIPT.parent) not in sys.path:
    sys.path.insert(0, str(SCRIPT.parent))

from anchor._setup import CACHE_ENV  # noqa: E402
from anchor._setup import DEFAULT_RELEASE as NEWEST  # noqa: E402

INDEX_FILE = "store/src/main/java/org/apache/rocketmq/store/index/IndexFile.java"
NEEDED = (
    INDEX_FILE,
    "store/src/main/java/org/apache/rocketmq/store/index/IndexHeader.java",
    "store/src/main/java/org/apache/rocketmq/store/ReferenceResource.java",
    "common/src/main/java/org/apache/rocketmq/common/constant/LoggerName.java",
)


def harness(
    tmp_path: Path, *args: str, path: str | None = None, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The script in a subprocess; ``cache`` replaces the release cache (else the user's)."""
    env = dict(os.environ)
    if cache is not None:
        env[CACHE_ENV] = str(cache)
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


def test_empty_checkout_option_says_what_to_give(tmp_path: Path) -> None:
    line = one_line_refusal(harness(tmp_path, "--rocketmq", "", cache=tmp_path / "cache"))
    assert "--rocketmq is empty" in line
    assert "leave the option out to run the released jar" in line
    assert not (tmp_path / "build").exists() and not (tmp_path / "results").exists()
    assert not (tmp_path / "cache").exists()


def test_missing_checkout_folder_is_named(tmp_path: Path) -> None:
    line = one_line_refusal(harness(tmp_path, "--rocketmq", str(tmp_path / "nowhere")))
    assert f"ROCKETMQ={tmp_path / 'nowhere'}: no such folder" in line


def test_release_and_checkout_cannot_both_be_given(tmp_path: Path) -> None:
    proc = harness(tmp_path, "--release", NEWEST, "--rocketmq", str(tmp_path))
    assert proc.returncode == 2
    assert "not allowed with argument" in proc.stderr


def test_release_that_is_not_a_version_is_refused_before_maven(tmp_path: Path) -> None:
    proc = harness(tmp_path, "--release", "latest", cache=tmp_path / "cache")
    line = one_line_refusal(proc)
    assert "--release 'latest': expected a RocketMQ release as MAJOR.MINOR.PATCH" in line
    assert proc.stdout == ""
    assert not (tmp_path / "cache").exists()


def jdk_only_path(tmp_path: Path) -> str:
    """A PATH holding java and javac but not mvn."""
    bin_dir = tmp_path / "jdk-bin"
    bin_dir.mkdir()
    for tool in ("java", "javac"):
        found = shutil.which(tool)
        assert found is not None, f"the anchor's tests need a JDK 17: no {tool} on PATH"
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_no_maven_on_path_says_what_to_install(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    line = one_line_refusal(harness(tmp_path, cache=cache, path=jdk_only_path(tmp_path)))
    assert "mvn not found on PATH" in line
    assert f"RocketMQ {NEWEST}'s org.apache.rocketmq:rocketmq-store jar" in line
    assert "--rocketmq PATH" in line
    assert not (cache / NEWEST / "lib").exists()


def test_a_cached_release_needs_no_maven(tmp_path: Path) -> None:
    # A cache already holding the release is used as it is: no mvn on PATH is needed. Its
    # jar here is not a jar, so javac says so and the refusal points at its log.
    cache = tmp_path / "cache"
    lib = cache / "9.9.9" / "lib"
    lib.mkdir(parents=True)
    (lib / "rocketmq-store-9.9.9.jar").write_bytes(b"not a jar")
    # What a run killed while Maven copied jars leaves: its staging folder.
    stale = cache / "9.9.9" / ".lib-4242"
    stale.mkdir()
    (stale / "rocketmq-common-9.9.9.jar").write_bytes(b"half")
    line = one_line_refusal(
        harness(tmp_path, "--release", "9.9.9", cache=cache, path=jdk_only_path(tmp_path))
    )
    assert "javac could not compile the driver against RocketMQ 9.9.9's " in line
    assert "rocketmq-store-9.9.9.jar" in line
    assert str(tmp_path / "build" / "javac.log") in line
    # The next run, holding the release's lock, removed it; the lock file is gone too.
    assert sorted(p.name for p in (cache / "9.9.9").iterdir()) == ["lib"]
    assert sorted(p.name for p in cache.iterdir()) == ["9.9.9"]


def test_release_that_does_not_resolve_leaves_no_half_cache(tmp_path: Path) -> None:
    # Maven asks Maven Central for a release that was never made.
    cache = tmp_path / "cache"
    proc = harness(tmp_path, "--release", "0.0.1", cache=cache)
    line = one_line_refusal(proc)
    # Before Maven runs, the user is told what it fetches and where.
    assert "RocketMQ 0.0.1: fetching org.apache.rocketmq:rocketmq-store:0.0.1 " in proc.stdout
    assert str(cache / "0.0.1") in proc.stdout
    assert "RocketMQ 0.0.1: Maven could not resolve " in line
    assert "org.apache.rocketmq:rocketmq-store:0.0.1 with its dependencies" in line
    log = cache / "0.0.1" / "maven.log"
    assert f"(full output: {log})" in line and "--release X.Y.Z" in line
    assert "rocketmq-store" in log.read_text()
    assert sorted(p.name for p in (cache / "0.0.1").iterdir()) == ["maven.log", "pom.xml"]


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


SMALL = (
    "--lookups",
    "3000",
    "--slots",
    "5000",
    "--warmup-keys",
    "3000",
    "--java-opts=-Xmx512m",
)


def small_real_run(tmp_path: Path, n: int, repeats: int, *args: str) -> dict[str, Any]:
    """A real side-by-side run at a small size that must come out byte-identical, with
    equal answers; its record."""
    proc = harness(
        tmp_path,
        "--n",
        str(n),
        "--entries",
        str(n + 1),
        "--repeats",
        str(repeats),
        "--warmup-rounds",
        str(repeats),
        *SMALL,
        "--workdir",
        str(tmp_path / "work"),
        *args,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "RocketMQ Java" in out and "rmqarrow" in out and "Java / rmqarrow" in out
    assert f"index files byte-identical {repeats}/{repeats}" in out
    assert f"answers equal {repeats}/{repeats} (3,000 queries" in out
    assert f"every query found its key {repeats}/{repeats}" in out
    records = list((tmp_path / "results").glob("anchor-*.json"))
    assert len(records) == 1
    record: dict[str, Any] = json.loads(records[0].read_text())
    assert record["ok"] is True
    assert record["load_at_start"]["1m"] >= 0 and record["machine"]["cpus"] >= 1
    (result,) = record["results"]
    assert result["n"] == n and result["file_size"] == 40 + 5000 * 4 + (n + 1) * 20
    for run in result["runs"]:
        assert run["files"]["identical"] and run["answers"]["equal"]
        assert run["java"]["stored"] == run["rmqarrow"]["stored"] == n
        for side in ("java", "rmqarrow"):
            assert run[side]["build_wall_s"] > 0 and run[side]["lookup_cpu_s"] >= 0
    ratio = result["summary"]["build_wall_s"]["java_over_rmqarrow"]["median"]
    assert ratio > 0
    # The run's files are gone; only the record stays.
    assert list((tmp_path / "work").iterdir()) == []
    return record


@pytest.mark.slow
def test_newest_release_index_file_and_rmqarrow_write_the_same_bytes(tmp_path: Path) -> None:
    # No source and no release named: the newest release's own jar, which Maven fetches
    # from Maven Central into the user's cache on first use (later runs reuse it).
    record = small_real_run(tmp_path, 20_000, 1)
    rmq = record["rocketmq"]
    assert rmq["source"] == "release" and rmq["release"] == NEWEST
    assert rmq["artifact"] == f"org.apache.rocketmq:rocketmq-store:{NEWEST}"
    assert f"rocketmq-store-{NEWEST}.jar" in rmq["jars"]
    assert len(rmq["store_jar_sha256"]) == 64
    # RocketMQ's real mapped file and logging ran, not the checkout mode's stand-ins.
    assert any(j.startswith("rocketmq-common-") for j in rmq["jars"])
    assert not (tmp_path / "build" / "classes" / "org").exists()
    assert record["java"]["flags"] == []


@pytest.mark.slow
def test_a_4x_release_runs_too(tmp_path: Path) -> None:
    # 4.9's IndexFile has no shutdown() and its mapped file needs java.nio opened on JDK 17.
    record = small_real_run(tmp_path, 5_000, 1, "--release", "4.9.7")
    assert record["rocketmq"]["release"] == "4.9.7"
    assert "rocketmq-store-4.9.7.jar" in record["rocketmq"]["jars"]
    assert "--add-opens=java.base/java.nio=ALL-UNNAMED" in record["java"]["flags"]


_SOURCES_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rmqarrow.tests</groupId>
  <artifactId>rocketmq-sources</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-store</artifactId>
      <version>{v}</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-common</artifactId>
      <version>{v}</version></dependency>
  </dependencies>
</project>
"""


def checkout_from_released_sources(root: Path, version: str) -> Path:
    """A source tree laid out as RocketMQ's repository, holding the files the checkout mode
    compiles, taken from the release's -sources jars on Maven Central (as published)."""
    work = root / "sources"
    work.mkdir(parents=True)
    (work / "pom.xml").write_text(_SOURCES_POM.format(v=version))
    mvn = shutil.which("mvn")
    assert mvn is not None, "the anchor's tests need Maven (mvn) on PATH"
    proc = subprocess.run(
        [
            mvn,
            "-B",
            "-q",
            "-f",
            str(work / "pom.xml"),
            "dependency:copy-dependencies",
            "-Dclassifier=sources",
            "-DexcludeTransitive=true",
            f"-DoutputDirectory={work / 'jars'}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checkout = root / "rocketmq"
    for rel in NEEDED:
        module, inside = rel.split("/src/main/java/")
        jar = work / "jars" / f"rocketmq-{module}-{version}-sources.jar"
        with zipfile.ZipFile(jar) as z:
            (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
            (checkout / rel).write_bytes(z.read(inside))
    return checkout


@pytest.mark.slow
def test_checkout_mode_compiles_index_file_and_matches_byte_for_byte(tmp_path: Path) -> None:
    # A RocketMQ checkout from $ROCKETMQ_SRC, else the newest release's published sources.
    given = os.environ.get("ROCKETMQ_SRC")
    checkout = Path(given) if given else checkout_from_released_sources(tmp_path, NEWEST)
    record = small_real_run(tmp_path, 5_000, 2, "--rocketmq", str(checkout))
    assert str(checkout.resolve()) not in json.dumps(record)
    assert "--rocketmq '$ROCKETMQ'" in record["command"]
    rmq = record["rocketmq"]
    assert rmq["source"] == "checkout" and len(rmq["sources"]) == 4
    if not given:
        assert rmq["commit"] is None and rmq["modified"] is None
        # The record's blob ids are git's ids of exactly the files that were compiled.
        for rel, blob in rmq["sources"].items():
            data = (checkout / rel).read_bytes()
            assert blob == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
