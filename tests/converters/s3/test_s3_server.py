"""The S3 test server itself (rmqarrow.testing.s3_server): the one that runs is the one
chosen, and it honours what delta-rs needs to commit safely, a conditional put that
refuses to replace an existing key."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from rmqarrow.errors import EngineUnavailableError, UsageError
from rmqarrow.testing import s3_server as servers
from rmqarrow.testing.s3_server import S3Server


def _client(server: S3Server) -> Any:
    env = server.env()
    return boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_REGION"],
    )


def test_session_server_is_the_chosen_one(s3_server: S3Server) -> None:
    assert s3_server.kind == servers.chosen_server()
    with open(f"/proc/{s3_server.pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    if s3_server.kind == "versitygw":
        assert argv[0] == str(servers.versitygw_binary()).encode() and b"posix" in argv
    else:
        assert b"moto.server" in argv


def test_conditional_put_refuses_an_existing_key(s3_server: S3Server, s3_bucket: str) -> None:
    client = _client(s3_server)
    bucket = s3_bucket.removeprefix("s3://")
    key = f"_delta_log/{uuid.uuid4().hex}.json"
    client.put_object(Bucket=bucket, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=bucket, Key=key, Body=b"second", IfNoneMatch="*")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert client.get_object(Bucket=bucket, Key=key)["Body"].read() == b"first"


def test_unknown_server_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQARROW_S3_SERVER", "minio")
    with pytest.raises(UsageError, match="'minio' names no S3 test server; expected one of"):
        servers.chosen_server()


def test_unset_choice_follows_the_built_binary(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RMQARROW_S3_SERVER", raising=False)
    monkeypatch.setenv("RMQARROW_S3_CACHE", str(tmp_path))
    assert servers.chosen_server() == "moto"
    binary = servers.versitygw_binary()
    assert binary == tmp_path / servers.VERSITYGW_VERSION / "versitygw"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"")
    assert servers.chosen_server() == "versitygw"


def test_gateway_chosen_but_not_built_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RMQARROW_S3_SERVER", "versitygw")
    monkeypatch.setenv("RMQARROW_S3_CACHE", str(tmp_path))
    with pytest.raises(EngineUnavailableError, match="is not built; run `make s3-server`"):
        servers.start_server(tmp_path / "server.log")
