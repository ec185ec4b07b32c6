"""A small Spark standalone cluster on 127.0.0.1, started with pip-pyspark's own scripts.

pip's pyspark ships ``sbin/spark-daemon.sh`` but not ``start-master.sh`` /
``start-worker.sh``; this module starts a master and N workers with it, each with its
own log, pid and work directory under one base directory, on free loopback ports, and
waits until every worker has registered with the master.  It is what the ``cluster``
tests use and what ``make cluster-start`` / ``make cluster-stop`` run::

    python tests/cluster/launcher.py start --dir /tmp/rmq-cluster
    python tests/cluster/launcher.py status --dir /tmp/rmq-cluster
    python tests/cluster/launcher.py stop --dir /tmp/rmq-cluster

``start`` prints the master URL (also written to ``DIR/master-url``).  Executors write
their logs under ``DIR/work/worker-N/<app-id>/<executor-id>/stderr``.  Only loopback
addresses are ever used: this is a test cluster, not a deployment tool, which is why it
lives with the tests and is not shipped in the package.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rmqarrow.errors import EngineError, EngineUnavailableError, RmqArrowError

__all__ = [
    "MASTER_CLASS",
    "WORKER_CLASS",
    "Cluster",
    "executor_logs",
    "free_port",
    "main",
    "spark_home",
    "start_cluster",
    "stop_cluster",
]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"
_STATE = "cluster.json"


def spark_home() -> Path:
    """The pyspark installation holding ``sbin/spark-daemon.sh`` and ``bin/spark-class``."""
    try:
        import pyspark
    except ImportError:
        raise EngineUnavailableError(
            "a test cluster needs pyspark: pip install 'rmqarrow[spark]' (and Java 17)"
        ) from None
    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    if not (home / "sbin" / "spark-daemon.sh").is_file():
        raise EngineUnavailableError(
            f"{home}/sbin/spark-daemon.sh not found: SPARK_HOME must be a Spark (or pip "
            f"pyspark) installation; unset SPARK_HOME to use pip's pyspark"
        )
    return home


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """A running (or stopped) standalone cluster: where it lives and how to reach it."""

    base: Path
    port: int
    webui_port: int
    workers: int
    cores: int = 1
    memory: str = "1g"
    env: dict[str, str] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.base / "logs"

    @property
    def work_dir(self) -> Path:
        return self.base / "work"

    def worker_dir(self, n: int) -> Path:
        return self.work_dir / f"worker-{n}"

    def save(self) -> None:
        state = {
            "port": self.port,
            "webui_port": self.webui_port,
            "workers": self.workers,
            "cores": self.cores,
            "memory": self.memory,
            "env": self.env,
        }
        (self.base / _STATE).write_text(json.dumps(state, indent=1))
        (self.base / "master-url").write_text(self.master_url + "\n")

    @classmethod
    def load(cls, base: str | os.PathLike[str]) -> Cluster:
        path = Path(base).absolute()
        try:
            state = json.loads((path / _STATE).read_text())
        except (OSError, ValueError):
            raise RmqArrowError(
                f"{path}: no test cluster state here ({_STATE} missing or unreadable); "
                f"start one with `python tests/cluster/launcher.py start --dir {path}`"
            ) from None
        return cls(path, **state)

    def registered_workers(self) -> int:
        """How many workers the master's log says have registered."""
        return sum(
            p.read_text(errors="replace").count("Registering worker")
            for p in self.log_dir.glob(f"*{MASTER_CLASS}-1-*.out")
        )

    def _daemon_env(self, worker: int | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
        env.update(self.env)
        env.update(
            {
                "SPARK_HOME": str(spark_home()),
                "SPARK_LOG_DIR": str(self.log_dir),
                "SPARK_PID_DIR": str(self.base / "pids"),
                "SPARK_IDENT_STRING": "rmqarrow",
            }
        )
        env.pop("SPARK_NO_DAEMONIZE", None)
        env.setdefault("SPARK_DAEMON_MEMORY", "256m")
        if worker is not None:
            env["SPARK_WORKER_DIR"] = str(self.worker_dir(worker))
        return env

    def daemon(self, action: str, cls_name: str, instance: int, *args: str) -> None:
        script = spark_home() / "sbin" / "spark-daemon.sh"
        worker = instance if cls_name == WORKER_CLASS else None
        proc = subprocess.run(
            ["bash", str(script), action, cls_name, str(instance), *args],
            env=self._daemon_env(worker),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0 and action == "start":
            raise EngineError(
                f"spark-daemon.sh start {cls_name} {instance} failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[:300]}; logs in {self.log_dir}"
            )


def start_cluster(
    base: str | os.PathLike[str],
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    env: dict[str, str] | None = None,
    timeout: float = 180.0,
) -> Cluster:
    """Start a master and ``workers`` workers under ``base``; return once all registered.

    ``env`` is added to the daemons' environment (e.g. ``PYSPARK_PYTHON`` for executors).
    On any failure everything started so far is stopped before the error is raised.
    """
    from rmqarrow.converters.spark.session import check_java

    check_java()
    path = Path(base).absolute()
    for sub in ("logs", "pids", "work"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    cluster = Cluster(path, free_port(), free_port(), workers, cores, memory, dict(env or {}))
    cluster.save()
    try:
        cluster.daemon(
            "start",
            MASTER_CLASS,
            1,
            "--host",
            HOST,
            "--port",
            str(cluster.port),
            "--webui-port",
            str(cluster.webui_port),
        )
        for n in range(1, workers + 1):
            cluster.worker_dir(n).mkdir(parents=True, exist_ok=True)
            cluster.daemon(
                "start",
                WORKER_CLASS,
                n,
                cluster.master_url,
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--host",
                HOST,
                "--webui-port",
                "0",
                "--work-dir",
                str(cluster.worker_dir(n)),
            )
        deadline = time.monotonic() + timeout
        while cluster.registered_workers() < workers:
            if time.monotonic() > deadline:
                raise EngineError(
                    f"only {cluster.registered_workers()} of {workers} workers registered with "
                    f"{cluster.master_url} within {timeout:.0f} s; see the logs in "
                    f"{cluster.log_dir}"
                )
            time.sleep(0.5)
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: Cluster | str | os.PathLike[str]) -> None:
    """Stop the workers (and so their executors), then the master; safe to call twice."""
    if not isinstance(cluster, Cluster):
        cluster = Cluster.load(cluster)
    for n in range(cluster.workers, 0, -1):
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            cluster.daemon("stop", WORKER_CLASS, n)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        cluster.daemon("stop", MASTER_CLASS, 1)


def executor_logs(cluster: Cluster, app_id: str | None = None) -> dict[int, list[Path]]:
    """Worker number -> the executor ``stderr`` logs it holds (of ``app_id`` if given)."""
    out: dict[int, list[Path]] = {}
    for n in range(1, cluster.workers + 1):
        apps = cluster.worker_dir(n).glob(f"{app_id or 'app-*'}/*/stderr")
        out[n] = sorted(apps)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python tests/cluster/launcher.py start|stop|status --dir DIR``."""
    parser = argparse.ArgumentParser(
        prog="python tests/cluster/launcher.py",
        description="Start or stop a Spark standalone test cluster on 127.0.0.1.",
    )
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("build/spark-cluster"),
        help="where logs, pids and work dirs go (default build/spark-cluster)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="memory per worker (e.g. 1g)")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            if (args.dir / _STATE).is_file():
                stop_cluster(args.dir)  # a cluster left running in the same dir
            cluster = start_cluster(
                args.dir, workers=args.workers, cores=args.cores, memory=args.memory
            )
            print(cluster.master_url)
            print(
                f"# master UI http://{HOST}:{cluster.webui_port}; logs {cluster.log_dir}; "
                f"stop: python tests/cluster/launcher.py stop --dir {args.dir}",
                file=sys.stderr,
            )
        elif args.action == "stop":
            stop_cluster(args.dir)
            print(f"stopped the cluster in {args.dir}")
        else:
            cluster = Cluster.load(args.dir)
            pids = sorted(p.name for p in (cluster.base / "pids").glob("*.pid"))
            print(f"{cluster.master_url} workers={cluster.workers} pid files={len(pids)}")
    except RmqArrowError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
