"""Fixtures for the CommitLog tests: the golden store and its messages.tsv."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from golden_data import GOLDEN

from rmqarrow.format.queries import unescape_text

STORE1 = GOLDEN / "commitlog" / "store1"
COMMITLOG = STORE1 / "commitlog"
MAPPED_SIZE = 65536

COLUMNS = [
    "physical_offset",
    "total_size",
    "magic",
    "queue_id",
    "queue_offset",
    "sys_flag",
    "born_timestamp",
    "store_timestamp",
    "born_host",
    "store_host",
    "topic",
    "tags",
    "keys",
    "uniq_key",
    "body_crc",
    "body_length",
    "properties",
    "flag",
    "reconsume_times",
    "prepared_transaction_offset",
    "msg_id",
    "body_sha256",
]
TEXT = {"born_host", "store_host", "topic", "tags", "keys", "uniq_key", "properties"}
INTS = {
    "physical_offset",
    "total_size",
    "queue_id",
    "queue_offset",
    "sys_flag",
    "born_timestamp",
    "store_timestamp",
    "body_crc",
    "body_length",
    "flag",
    "reconsume_times",
    "prepared_transaction_offset",
}


def load_messages_tsv() -> list[dict[str, object]]:
    rows = []
    for line in (STORE1 / "messages.tsv").read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        assert len(fields) == len(COLUMNS)
        row: dict[str, object] = {}
        for name, value in zip(COLUMNS, fields, strict=True):
            if name in INTS:
                row[name] = int(value)
            elif name in TEXT:
                text = unescape_text(value)
                row[name] = None if text == "" and name in {"tags", "keys", "uniq_key"} else text
            else:
                row[name] = value
        rows.append(row)
    return rows


@pytest.fixture(scope="session")
def messages_tsv() -> list[dict[str, object]]:
    """messages.tsv, unescaped, one dict a line; absent properties are None."""
    return load_messages_tsv()


@pytest.fixture(scope="session")
def golden_commitlog() -> Path:
    """The golden store's commitlog directory (read only)."""
    return COMMITLOG


@pytest.fixture
def store_copy(tmp_path: Path) -> Path:
    """A writable copy of the golden commitlog directory."""
    dst = tmp_path / "commitlog"
    shutil.copytree(COMMITLOG, dst)
    return dst
