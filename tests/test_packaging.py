"""The wheel users install: one top-level package, the license shipped, no stray modules,
the metadata a package index shows, and a working core-only install in a fresh venv."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a clean copy of the sources: setuptools reuses a checkout's
    build/lib, which can hold modules the package list no longer (or never did) name."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "build",
            "*.egg-info",
            "__pycache__",
            ".mypy_cache",
            ".ruff_cache",
            ".pytest_cache",
            "tests",
            "benchmarks",
            "docs",
        ),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "deprecat" not in done.stderr.lower(), done.stderr
    (built,) = tmp_path.glob("rmqarrow-*.whl")
    return built


@pytest.mark.slow
def test_wheel_has_one_top_level_package_and_the_license(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert z.read(info).decode().split() == ["rmqarrow"]
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "rmqarrow"
    }
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in metadata
    for module in (
        "rmqarrow/converters/spark/export.py",
        "rmqarrow/converters/schema.py",
        "rmqarrow/kernels/walk.py",
        "rmqarrow/tiered/__init__.py",
        "rmqarrow/py.typed",
    ):
        assert module in names, module
    # every module of the tree ships: a package missing from pyproject's list would not
    for top, prefix in (("rmqarrow", "rmqarrow"), ("converters", "rmqarrow/converters")):
        for path in (ROOT / top).rglob("*.py"):
            shipped = f"{prefix}/{path.relative_to(ROOT / top).as_posix()}"
            assert shipped in names, shipped


@pytest.mark.slow
def test_wheel_metadata_is_what_a_package_index_shows(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        raw = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
    meta = Parser().parsestr(raw.decode())
    assert meta["Author"] == "rmqarrow developers"
    assert meta["Maintainer"] == "rmqarrow developers"
    assert "rocketmq" in meta["Keywords"].split(",")
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers
    assert "Operating System :: POSIX" in classifiers
    assert meta["Requires-Python"] == PROJECT["requires-python"]
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# rmqarrow")
    assert set(meta.get_all("Provides-Extra")) == set(PROJECT["optional-dependencies"])


def test_python_classifiers_agree_with_requires_python() -> None:
    """Every Python version the classifiers claim is allowed, the oldest allowed one is
    claimed, and none is skipped between them."""
    allowed = SpecifierSet(PROJECT["requires-python"])
    claimed = sorted(
        (int(m.group(1)), int(m.group(2)))
        for c in PROJECT["classifiers"]
        if (m := re.fullmatch(r"Programming Language :: Python :: (\d+)\.(\d+)", c))
    )
    assert claimed, "no Programming Language :: Python :: 3.N classifier"
    for major, minor in claimed:
        assert f"{major}.{minor}" in allowed, f"{major}.{minor} is outside {allowed}"
    oldest = min(v for v in range(8, 20) if f"3.{v}" in allowed)
    assert claimed[0] == (3, oldest)
    assert claimed == [(3, m) for m in range(claimed[0][1], claimed[-1][1] + 1)]


def test_readme_links_work_on_a_package_index_page() -> None:
    """The README is the package index's project page, where a relative link goes nowhere:
    the project names no repository URL to make them absolute, so there are none."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)", text) + re.findall(r"<img [^>]*src=\"([^\"]+)", text)
    relative = [t for t in targets if not re.match(r"https?://", t)]
    assert relative == []


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_extras_tables_name_every_extra(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z]+)` \|", text, flags=re.MULTILINE))
    assert listed == set(PROJECT["optional-dependencies"])


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_core_only_install_in_a_fresh_venv_runs_the_demo(wheel: Path, tmp_path: Path) -> None:
    """What `pip install rmqarrow` gives a new user: the wheel with its core dependencies only
    (pip's cache makes the second run fast), no Spark, no numba.  The CLI starts, the demo
    runs its native and DuckDB parts and says in one line that it left Spark out."""
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    assert made.returncode == 0, made.stderr
    python, rmqarrow = venv / "bin" / "python", venv / "bin" / "rmqarrow"
    installed = _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    frozen = _run([str(python), "-m", "pip", "freeze"], tmp_path).stdout.lower()
    for core in ("numpy", "pyarrow", "duckdb"):
        assert f"{core}==" in frozen
    for extra in ("pyspark", "numba", "matplotlib", "rocksdict"):
        assert f"{extra}==" not in frozen

    helped = _run([str(rmqarrow), "--help"], tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "demo" in helped.stdout

    imported = _run(
        [str(python), "-c", "import rmqarrow.converters, rmqarrow; print(rmqarrow.__file__)"],
        tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith(str(venv))  # the installed copy, not the checkout

    demo = _run([str(rmqarrow), "demo", "--size", "small", "--out", "demo"], tmp_path)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "Traceback" not in demo.stderr
    spark_lines = [ln for ln in demo.stderr.splitlines() if "spark" in ln.lower()]
    assert len(spark_lines) == 1, demo.stderr
    assert spark_lines[0].startswith("note: leaving Spark out: ")
    assert "pyspark" in spark_lines[0]
    assert "duckdb" in demo.stdout.lower()
    assert (tmp_path / "demo").is_dir()


def test_dev_tools_are_pinned_and_installed_at_their_pins() -> None:
    """`make lint` and `make docs-build` judge with the versions pyproject names, exactly:
    every dev requirement but the project's own extras is pinned with ``==``, and the
    environment running the tests has those versions (``make setup`` installs them)."""
    from importlib.metadata import version

    from packaging.requirements import Requirement

    pins = [Requirement(r) for r in PROJECT["optional-dependencies"]["dev"]]
    tools = [r for r in pins if r.name != "rmqarrow"]
    assert {r.name for r in tools} >= {"pytest", "hypothesis", "ruff", "mypy", "mkdocs"}
    for r in tools:
        (spec,) = r.specifier
        assert spec.operator == "==", f"{r}: pin it with =="
        assert version(r.name) == spec.version, f"{r.name} {version(r.name)} installed: make setup"


def test_lowest_constraints_pin_every_lower_bound() -> None:
    """`make test-lowest` installs .ci/lowest.txt: exactly each core dependency's lower bound."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    pinned = {}
    for line in (ROOT / ".ci" / "lowest.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[name.strip()] = Version(version.strip())
    bounds = {}
    for dep in PROJECT["dependencies"]:
        r = Requirement(dep)
        (spec,) = r.specifier
        assert spec.operator == ">=", f"{dep}: a core dependency has a lower bound only"
        bounds[r.name] = Version(spec.version)
    assert pinned == bounds
