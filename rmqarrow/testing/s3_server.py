"""A real S3-compatible server on 127.0.0.1, for the object-storage tests and benchmarks.

The server is moto's standalone server (``moto[server]``, pinned in the dev extra), run as
its own process by pid: a real HTTP S3 endpoint that answers signed requests and honours
conditional writes (``If-None-Match: *``), which delta-rs relies on to commit safely on
S3.  (MinIO is AGPL; SeaweedFS is Apache-2.0 but a Go build too heavy for the suite's
budget.)  A client gets the usual AWS settings (:meth:`S3Server.env`), the ones rmqarrow,
pyarrow and delta-rs read.  moto keeps the objects in the server's memory.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CREDENTIALS", "S3Server", "start_server", "stop_server"]

#: The settings a client's environment gets (the endpoint is added per server).
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "rmqarrow-test",
    "AWS_SECRET_ACCESS_KEY": "rmqarrow-test-secret",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ALLOW_HTTP": "true",
}


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint and process id."""

    endpoint: str
    pid: int

    def env(self) -> dict[str, str]:
        """The environment a client of this server needs."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}


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


def start_server(log: Path) -> tuple[S3Server, subprocess.Popen[bytes]]:
    """Start the server on a free port of 127.0.0.1 and wait until it answers; its output
    goes to ``log``.  Stop it with :func:`stop_server`."""
    hook = _die_with_parent_hook()
    for _ in range(5):
        port = _free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=hook,
            )
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            try:  # moto's own API: another program on the port does not answer it
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
                    pass
            except OSError:
                time.sleep(0.1)
                continue
            if proc.poll() is None:
                return S3Server(f"http://127.0.0.1:{port}", proc.pid), proc
        stop_server(proc)  # the port was taken meanwhile, or it never answered
    raise RuntimeError(f"the S3 test server did not start; see {log}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Kill the server by its pid (and nothing else) and reap it."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
