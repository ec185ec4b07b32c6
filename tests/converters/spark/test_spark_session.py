"""The checks that turn a missing pyspark or a bad Java into an error naming the fix."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from rmqarrow.converters.spark import session as spark_session

from rmqarrow.errors import EngineUnavailableError, RmqArrowError


def _fake_java(tmp_path: Path, version_line: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return home


def test_bad_java_home_names_java_home_and_17(tmp_path: Path) -> None:
    env = {"JAVA_HOME": str(tmp_path / "no-such-jdk"), "PATH": os.environ["PATH"]}
    with pytest.raises(EngineUnavailableError) as info:
        spark_session.check_java(env)
    message = str(info.value)
    assert "JAVA_HOME" in message and "Java 17" in message
    assert str(tmp_path / "no-such-jdk") in message
    assert isinstance(info.value, RmqArrowError) and isinstance(info.value, ImportError)


def test_no_java_on_path(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailableError, match="JAVA_HOME is not set"):
        spark_session.check_java({"PATH": str(tmp_path)})


def test_old_java_is_refused(tmp_path: Path) -> None:
    home = _fake_java(tmp_path, 'openjdk version "1.8.0_392"')
    with pytest.raises(EngineUnavailableError, match=r"Java 8, expected Java 17"):
        spark_session.check_java({"JAVA_HOME": str(home), "PATH": os.environ["PATH"]})


def test_java_17_is_accepted(tmp_path: Path) -> None:
    home = _fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    assert spark_session.check_java({"JAVA_HOME": str(home), "PATH": ""}) == 17


def test_machine_java_is_usable() -> None:
    assert spark_session.check_java() >= spark_session.MIN_JAVA


def test_missing_pyspark_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(EngineUnavailableError, match=r"pip install 'rmqarrow\[spark\]'"):
        spark_session.check_pyspark()
    with pytest.raises(EngineUnavailableError, match=r"rmqarrow\[spark\]"):
        spark_session.get_spark()


def test_bad_java_home_fails_before_starting_a_jvm(tmp_path: Path) -> None:
    """A fresh process with a broken JAVA_HOME gets the clear error, not a gateway crash."""
    import subprocess

    env = dict(os.environ, JAVA_HOME=str(tmp_path / "missing"))
    env.pop("PYSPARK_GATEWAY_PORT", None)
    code = (
        "from rmqarrow.converters.spark.session import get_spark\n"
        "from rmqarrow.errors import EngineUnavailableError\n"
        "try:\n    get_spark('local[1]')\n"
        "except EngineUnavailableError as e:\n    print('ERR', e)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.stdout.startswith("ERR "), proc.stdout + proc.stderr
    assert "JAVA_HOME" in proc.stdout and "Java 17" in proc.stdout


@pytest.mark.spark
@pytest.mark.slow
def test_new_session_prints_nothing() -> None:
    """A JVM started by get_spark keeps Spark's console noise off stdout and stderr."""
    import subprocess

    env = dict(os.environ)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    code = (
        "from rmqarrow.converters.spark.session import get_spark, jvm_log_path\n"
        "spark = get_spark('local[1]')\n"
        "assert spark.range(5).count() == 5\n"
        "spark.stop()\n"
        "import sys; sys.stderr.write(str(jvm_log_path()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    log = Path(proc.stderr)  # the only thing printed: where the JVM's console went
    # the per-run log is removed when the run ends well: no litter in $TMPDIR
    assert log.name.startswith("rmqarrow-spark-") and not log.exists()


@pytest.mark.spark
@pytest.mark.slow
def test_interactive_spark_sql_survives_a_bad_statement(tmp_path: Path) -> None:
    """A bad statement (AnalysisException) is one error line; the next statement runs."""
    import subprocess

    from golden_data import golden_set

    basic = golden_set("basic")
    env = dict(os.environ)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    proc = subprocess.run(
        [sys.executable, "-m", "rmqarrow", "sql", "--engine", "spark",
         str(basic.store_dir), "--hash-slot-num", "100", "--index-num", "400"],
        input="SELECT nope FROM entries;\nSELECT count(*) AS n FROM entries;\n",
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "AnalysisException" in errors[0] and "nope" in errors[0]
    assert "400" in proc.stdout  # the second statement ran
    assert proc.returncode == 1  # a failed statement in a script
    log = errors[0].rsplit("Spark's log: ", 1)
    if len(log) == 2:  # kept for the failure report; clean up after the test
        Path(log[1].strip()).unlink(missing_ok=True)
