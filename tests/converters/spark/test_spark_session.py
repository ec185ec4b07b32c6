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
        [
            sys.executable,
            "-m",
            "rmqarrow",
            "sql",
            "--engine",
            "spark",
            str(basic.store_dir),
            "--hash-slot-num",
            "100",
            "--index-num",
            "400",
        ],
        input="SELECT nope FROM entries;\nSELECT count(*) AS n FROM entries;\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "Traceback" not in proc.stderr
    assert "QueryContextLogger" not in proc.stderr  # pyspark's JSON line with the Java stack
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "AnalysisException" in errors[0] and "nope" in errors[0]
    assert "400" in proc.stdout  # the second statement ran
    assert proc.returncode == 1  # a failed statement in a script
    log = errors[0].rsplit("Spark's log: ", 1)
    if len(log) == 2:  # kept for the failure report; clean up after the test
        Path(log[1].strip()).unlink(missing_ok=True)


_LISTENERS = r"""
import json, os, sys
from rmqarrow.converters.spark.session import get_spark

spark = get_spark(ui=None if sys.argv[1] == "default" else True)
sc = spark.sparkContext
conf = dict(sc.getConf().getAll())
pid = sc._jvm.java.lang.ProcessHandle.current().pid()
inodes = set()
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        continue
    if target.startswith("socket:["):
        inodes.add(target[8:-1])
listening = []
for table, width in (("tcp", 8), ("tcp6", 32)):
    with open(f"/proc/{pid}/net/{table}") as fh:
        for line in fh.read().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN, one of the JVM's sockets
                listening.append(f[1])
print(json.dumps({"conf": conf, "ui": sc.uiWebUrl, "listening": listening}))
spark.stop()
"""


def _loopback(address: str) -> bool:
    """An address of /proc/net/tcp(6) (hex, host byte order) on the loopback interface."""
    host = address.split(":")[0]
    if len(host) == 8:
        return bytes.fromhex(host)[::-1][0] == 127
    return host in (
        "00000000000000000000000001000000",  # ::1
        "0000000000000000FFFF00000100007F",
    )  # ::ffff:127.0.0.1


def _listeners(mode: str, env: dict[str, str]) -> dict[str, object]:
    import json
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _LISTENERS, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_local_session_listens_on_loopback_only_and_has_no_ui() -> None:
    """A real local session: UI off, driver bound to 127.0.0.1, and every socket its JVM
    listens on is a loopback one (nothing on *:4040)."""
    env = {k: v for k, v in os.environ.items() if k not in (spark_session.UI_ENV, "SPARK_LOCAL_IP")}
    got = _listeners("default", env)
    conf = got["conf"]
    assert isinstance(conf, dict)
    assert conf["spark.ui.enabled"] == "false" and got["ui"] is None
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    listening = got["listening"]
    assert isinstance(listening, list) and listening  # the driver's RPC endpoint at least
    assert all(_loopback(a) for a in listening), listening


def test_ui_when_asked_and_still_on_loopback() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LOCAL_IP"}
    env[spark_session.UI_ENV] = "1"
    got = _listeners("default", env)
    conf = got["conf"]
    assert isinstance(conf, dict) and conf["spark.ui.enabled"] == "true" and got["ui"]
    listening = got["listening"]
    assert isinstance(listening, list) and all(_loopback(a) for a in listening)


def test_ui_choice() -> None:
    env = spark_session.UI_ENV
    saved = os.environ.pop(env, None)
    try:
        assert not spark_session.ui_wanted() and spark_session.ui_wanted(True)
        os.environ[env] = "1"
        assert spark_session.ui_wanted() and not spark_session.ui_wanted(False)
    finally:
        os.environ.pop(env, None)
        if saved is not None:
            os.environ[env] = saved
