"""A real S3-compatible server on 127.0.0.1 for the object-storage tests.

The server is moto's standalone server (``moto[server]``, pinned in the dev extra), run as
its own process by pid: a real HTTP S3 endpoint that answers signed requests and honours
conditional writes (``If-None-Match: *``), which delta-rs relies on to commit safely on
S3.  (MinIO is AGPL; SeaweedFS is Apache-2.0 but a Go build too heavy for the suite's
budget.)  Each test gets a bucket of its own and the usual AWS settings in its
environment, the ones rmqarrow, pyarrow and delta-rs read.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The settings a test's environment gets (the endpoint is added per server).
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
    """A hook for the server's process before exec: SIGKILL it when the test process dies,
    even killed (a timeout, kill -9) before the fixture's teardown could stop it (Linux).
    ``prctl`` is looked up here, in the parent: the child between fork and exec of a
    process with threads may call nothing that takes a lock (an import, ``dlopen``)."""
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
    """Start the server on a free port of 127.0.0.1 and wait until it answers."""
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


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One server for the test session, killed by pid at its end."""
    server, proc = start_server(tmp_path_factory.mktemp("s3") / "server.log")
    try:
        yield server
    finally:
        stop_server(proc)


@pytest.fixture
def s3_bucket(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new empty bucket on the server, with the test's environment pointing at it;
    returns ``s3://BUCKET``."""
    from pyarrow import fs

    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    bucket = f"rmqarrow-{uuid.uuid4().hex[:12]}"
    fs.S3FileSystem(endpoint_override=s3_server.endpoint, allow_bucket_creation=True).create_dir(
        bucket
    )
    return f"s3://{bucket}"
