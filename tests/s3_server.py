"""The S3 server fixtures of the object-storage tests: one real moto server a session
(:mod:`rmqarrow.testing.s3_server`, shared with the benchmarks), and each test a bucket of
its own with the usual AWS settings in its environment, the ones rmqarrow, pyarrow and
delta-rs read.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from rmqarrow.testing.s3_server import S3Server, start_server, stop_server

__all__ = ["s3_bucket", "s3_server"]


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
