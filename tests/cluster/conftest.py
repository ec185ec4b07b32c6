"""The test cluster: one standalone master and two workers on 127.0.0.1 for the session.

Started with pip-pyspark's ``spark-daemon.sh`` through ``launcher.py`` beside this file
(1 core and 1 GB per worker, logs, pids and work dirs under a temporary directory) and
stopped at the end of the session, also when tests fail.  Drivers run as subprocesses
(``cluster_driver.py``): this process may already hold the local ``spark`` session, and
one JVM holds one SparkContext.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
GOLDEN = HERE.parent / "golden"


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from cluster.launcher import start_cluster, stop_cluster

    cluster = start_cluster(
        tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g"
    )
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An executor Python without rmqarrow, which cannot see one directory.

    The base interpreter of this venv with a site directory of links to every installed
    distribution except rmqarrow (numpy, pyarrow, ... are there; rmqarrow is not), run
    in its own mount namespace where ``hidden`` is covered by an empty tmpfs: a path the
    driver sees and the executors do not.  Returns ``(wrapper, hidden)``.
    """
    import pyarrow

    base = tmp_path_factory.mktemp("bare-python")
    site = base / "site"
    site.mkdir()
    site_dirs = {Path(pyarrow.__file__).parents[1]}
    site_dirs |= {Path(p) for p in sys.path if p.endswith("site-packages")}
    for directory in sorted(site_dirs):
        for entry in directory.iterdir():
            name = entry.name
            if (
                name.startswith(("rmqarrow", "__editable__", "_main_deps"))
                or name.endswith(".pth")
                or (site / name).exists()
            ):
                continue
            (site / name).symlink_to(entry)
    hidden = base / "driver-only"
    hidden.mkdir()
    wrapper = base / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        "# the cluster tests' executor Python: no rmqarrow, and DRIVER_ONLY is invisible\n"
        f'export PYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        'exec unshare -m sh -c \'mount -t tmpfs rmq-hidden "$0" && exec "$@"\' '
        f'"{hidden}" "{sys._base_executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, hidden


def run_driver(
    cluster: Any, tmp: Path, app: str, steps: list[dict[str, Any]], conf: dict[str, str]
) -> dict[str, Any]:
    """Run ``cluster_driver.py`` with these steps as one application; its results."""
    spec = {
        "master": cluster.master_url,
        "app": app,
        "cwd": str(GOLDEN),
        "steps": steps,
        "conf": {
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            **conf,
        },
    }
    (tmp / f"{app}.spec.json").write_text(json.dumps(spec))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"
    }
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "cluster_driver.py"),
            str(tmp / f"{app}.spec.json"),
            str(tmp / f"{app}.result.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads((tmp / f"{app}.result.json").read_text())
    return result
