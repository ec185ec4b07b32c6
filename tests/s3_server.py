"""The S3 server fixtures of the object-storage tests: one real S3 server a session
(:mod:`rmqarrow.testing.s3_server`, shared with the benchmarks: the Versity S3 Gateway when
built, else moto), and each test a bucket of its own with the usual AWS settings in its
environment, the ones rmqarrow, pyarrow and delta-rs read.  pytest's header names the
server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from rmqarrow.testing.s3_server import (
    VERSITYGW_VERSION,
    S3Server,
    chosen_server,
    start_server,
    stop_server,
    versitygw_binary,
)

__all__ = ["pytest_report_header", "s3_bucket", "s3_server"]


def pytest_report_header() -> str:
    """Which S3 server the object-storage tests run against."""
    kind = chosen_server()
    if kind == "versitygw":
        return f"S3 test server: versitygw {VERSITYGW_VERSION} ({versitygw_binary()})"
    if os.environ.get("RMQARROW_S3_SERVER"):
        return "S3 test server: moto (RMQARROW_S3_SERVER)"
    return "S3 test server: moto (the Versity S3 Gateway is not built: make s3-server)"


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
