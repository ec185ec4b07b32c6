"""Shipping rmqarrow to executors (the zip) and the CLI's Spark options, without a JVM."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from rmqarrow.converters.spark.ship import package_zip, ship_enabled

from rmqarrow.cli import main


def test_zip_holds_the_whole_package_and_is_built_once(tmp_path: Path) -> None:
    first = package_zip(tmp_path)
    names = set(zipfile.ZipFile(first).namelist())
    for name in (
        "rmqarrow/__init__.py",
        "rmqarrow/errors.py",
        "rmqarrow/py.typed",
        "rmqarrow/converters/__init__.py",
        "rmqarrow/converters/spark/source.py",
        "rmqarrow/commitlog/reader.py",
    ):
        assert name in names, name
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    stamp = first.stat().st_mtime_ns
    assert package_zip(tmp_path) == first and first.stat().st_mtime_ns == stamp
    # a Python that has only the zip imports rmqarrow from it
    code = "import rmqarrow.converters.spark.batches as b, sys; print(b.__file__)"
    proc = subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            f"import sys; sys.path[:0] = [{str(first)!r}] + {sys.path!r}; {code}",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    assert proc.returncode == 0, proc.stderr
    assert str(first) in proc.stdout


def test_ship_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RMQARROW_SPARK_SHIP", raising=False)
    assert ship_enabled(None) is True
    assert ship_enabled("false") is False
    assert ship_enabled("true", explicit=False) is False
    monkeypatch.setenv("RMQARROW_SPARK_SHIP", "0")
    assert ship_enabled(None) is False


@pytest.mark.parametrize("bad", ["foo", "spark.x", "=1", "executor.memory=2g"])
def test_bad_conf_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["query", "store", "--key", "k", "--engine", "spark", "--conf", bad])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "KEY=VALUE" in err


def test_missing_py_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["sql", "store", "SELECT 1", "--engine", "spark", "--py-files", "a.py,nope.zip"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "a.py" in err
