"""A real S3-compatible server on 127.0.0.1, for the object-storage tests and benchmarks.

Two servers can play it, each run as its own process and stopped by its pid:

- ``versitygw``: the Versity S3 Gateway (Apache-2.0), a real S3 server written in Go, with
  its posix backend: buckets are directories and objects files of a directory that the
  caller's log sits beside.  It is built from the Go module proxy at one pinned version
  (:data:`VERSITYGW_VERSION`) by ``make s3-server`` (``python -m
  rmqarrow.testing.s3_server build``) into ``~/.cache/rmqarrow/versitygw/VERSION/``
  (``$RMQARROW_S3_CACHE`` instead of ``~/.cache/rmqarrow/versitygw``), and ``make test``
  builds it first.  A cold build (empty module and build caches) takes about 138
  CPU-seconds: 236 s wall on this project's 2-core machine at a 1-minute load up to 6.8,
  379 s at 7.6-10.3; once per machine, as a built binary is reused.
- ``moto``: moto's standalone server (``moto[server]``, pinned in the dev extra), a Python
  emulation of S3 that keeps the objects in its process's memory; the fallback where Go
  is missing.

``$RMQARROW_S3_SERVER`` chooses (``versitygw`` or ``moto``); unset, the real server runs
when its binary is built, else moto.  Both answer signed requests and honour conditional
writes (``If-None-Match: *`` on an existing key answers 412), which delta-rs relies on to
commit safely on S3.  MinIO is AGPL, so not used; SeaweedFS (Apache-2.0) took about 15
minutes to build cold on 2 cores, too long for the suite's CI budget.  A client gets the
usual AWS settings (:meth:`S3Server.env`), the ones rmqarrow, pyarrow and delta-rs read.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rmqarrow.errors import EngineUnavailableError, UsageError

__all__ = [
    "CREDENTIALS",
    "SERVERS",
    "VERSITYGW_VERSION",
    "S3Server",
    "build_versitygw",
    "chosen_server",
    "start_server",
    "stop_server",
    "versitygw_binary",
]

#: The settings a client's environment gets (the endpoint is added per server).
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "rmqarrow-test",
    "AWS_SECRET_ACCESS_KEY": "rmqarrow-test-secret",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}

#: The servers ``$RMQARROW_S3_SERVER`` may name.
SERVERS = ("versitygw", "moto")

#: The one version of the Versity S3 Gateway built and run (its Go module's version).
VERSITYGW_VERSION = "v1.8.0"
_VERSITYGW_PACKAGE = "github.com/versity/versitygw/cmd/versitygw"


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint, process id and which server it is."""

    endpoint: str
    pid: int
    kind: str = "moto"

    def env(self) -> dict[str, str]:
        """The environment a client of this server needs."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}


#: How long a cold build may take (about 4 minutes on two cores) before it is given up.
BUILD_TIMEOUT_S = 900


def versitygw_binary() -> Path:
    """Where the built gateway is: ``$RMQARROW_S3_CACHE/VERSION/versitygw``, by default
    under ``~/.cache/rmqarrow/versitygw``."""
    env = os.environ.get("RMQARROW_S3_CACHE")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "rmqarrow" / "versitygw"
    return root / VERSITYGW_VERSION / "versitygw"


def build_versitygw() -> Path:
    """Build the gateway at :data:`VERSITYGW_VERSION` from the Go module proxy into
    :func:`versitygw_binary`'s place, unless it is there already; returns its path."""
    binary = versitygw_binary()
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        raise EngineUnavailableError(
            "building the S3 test server needs Go (1.25 or newer), and no `go` is on PATH; "
            "install Go, or run the tests against moto with RMQARROW_S3_SERVER=moto"
        )
    binary.parent.mkdir(parents=True, exist_ok=True)
    # Built into a directory of its own and renamed into place: a build that is stopped
    # halfway leaves no binary that a later run would take for a finished one.
    with tempfile.TemporaryDirectory(dir=binary.parent, prefix=".build-") as scratch:
        env = {**os.environ, "GOBIN": scratch, "GOTOOLCHAIN": "local"}
        cmd = [go, "install", "-trimpath", "-ldflags", "-s -w"]
        cmd.append(f"{_VERSITYGW_PACKAGE}@{VERSITYGW_VERSION}")
        try:
            done = subprocess.run(cmd, env=env, check=False, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise EngineUnavailableError(
                f"`{' '.join(cmd)}` took over {BUILD_TIMEOUT_S} s (a slow or blocked module "
                "proxy?) and was stopped; run it again, or choose moto"
            ) from None
        built = Path(scratch) / "versitygw"
        if done.returncode != 0 or not built.is_file():
            raise EngineUnavailableError(
                f"`{' '.join(cmd)}` exited {done.returncode} (expected 0 and a binary); "
                f"see its output above, or run the tests against moto with "
                f"RMQARROW_S3_SERVER=moto"
            )
        built.replace(binary)
    return binary


def chosen_server() -> str:
    """The server that :func:`start_server` runs: ``$RMQARROW_S3_SERVER``, else
    ``versitygw`` when its binary is built, else ``moto``."""
    name = os.environ.get("RMQARROW_S3_SERVER", "").strip().lower()
    if name and name not in SERVERS:
        raise UsageError(
            f"RMQARROW_S3_SERVER={name!r} names no S3 test server; expected one of "
            f"{', '.join(SERVERS)}, or leave it unset for the real one when built"
        )
    if name:
        return name
    return "versitygw" if versitygw_binary().is_file() else "moto"


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A hook for the server's process before exec: SIGKILL it when its parent dies, even
    killed (a timeout, kill -9) before it could stop the server (Linux).  ``prctl`` is
    looked up here, in the parent: the child between fork and exec of a process with
    threads may call nothing that takes a lock (an import, ``dlopen``)."""
    if sys.platform != "linux":
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, signal.SIGKILL)

    return hook


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(kind: str, port: int, log: Path) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment."""
    if kind == "moto":
        cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        return cmd, dict(os.environ)
    binary = versitygw_binary()
    if not binary.is_file():
        raise EngineUnavailableError(
            f"RMQARROW_S3_SERVER=versitygw, but {binary} is not built; run `make s3-server` "
            f"(or `python -m rmqarrow.testing.s3_server build`), or choose moto"
        )
    data = log.parent / f"{log.stem}-data"
    data.mkdir(parents=True, exist_ok=True)
    # object metadata in files of its own, not in extended attributes, which a tmpfs of an
    # older kernel refuses
    meta = log.parent / f"{log.stem}-meta"
    meta.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "ROOT_ACCESS_KEY_ID": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "ROOT_SECRET_ACCESS_KEY": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "VGW_REGION": CREDENTIALS["AWS_REGION"],
    }
    cmd = [str(binary), "--port", f"127.0.0.1:{port}", "--quiet", "posix"]
    return [*cmd, "--sidecar", str(meta), str(data)], env


def _answers(kind: str, port: int) -> bool:
    """Whether the server of that kind answers on the port: each is asked something that
    another program on the port would not answer the same way."""
    if kind == "moto":
        try:  # moto's own API
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
                return True
        except OSError:
            return False
    try:  # unsigned, so refused: the refusal names the gateway
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
            server = reply.headers.get("Server")
    except urllib.error.HTTPError as refused:
        server = refused.headers.get("Server")
    except OSError:
        return False
    return bool(server == "VERSITYGW")


def start_server(log: Path) -> tuple[S3Server, subprocess.Popen[bytes]]:
    """Start the chosen server (:func:`chosen_server`) on a free port of 127.0.0.1 and
    wait until it answers; its output goes to ``log``, and the gateway keeps its buckets
    in the directory ``LOG-STEM-data`` beside it.  Stop it with :func:`stop_server`."""
    kind = chosen_server()
    hook = _die_with_parent_hook()
    for _ in range(5):
        port = _free_port()
        cmd, env = _command(kind, port, log)
        with log.open("ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=hook,
            )
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if not _answers(kind, port):
                time.sleep(0.1)
                continue
            if proc.poll() is None:
                return S3Server(f"http://127.0.0.1:{port}", proc.pid, kind), proc
        stop_server(proc)  # the port was taken meanwhile, or it never answered
    raise RuntimeError(f"the S3 test server ({kind}) did not start; see {log}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Kill the server by its pid (and nothing else) and reap it."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    """``build``: build the gateway unless built (``make s3-server``); ``which``: print
    the server that the tests would run."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["build"]:
        if os.environ.get("RMQARROW_S3_SERVER", "").strip().lower() == "moto":
            print("RMQARROW_S3_SERVER=moto: the gateway is not built")
            return 0
        try:
            print(build_versitygw())
        except EngineUnavailableError as exc:
            # the suite still runs, against moto: a machine without Go (or whose build
            # failed) loses the real server, not the object-storage tests
            print(f"warning: {exc}; the S3 tests run against moto", file=sys.stderr)
        return 0
    if args == ["which"]:
        print(chosen_server())
        return 0
    print("usage: python -m rmqarrow.testing.s3_server build|which", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
