"""The shorter pass over 5.4.0 with ``indexRocksDBEnable=true``: the first release with the
RocksDB message index (RIP-82).  As for 5.5.0 (``test_rocksdb_index.py``), the broker
answers from that index (``indexFileReadEnable=false``) and rmqarrow reads it offline after
a clean stop; the type letters are settled from the records the broker wrote.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rocketmq.workload import (
    Run,
    expected_rocksdb_types,
    key_queries,
    processes_naming,
    rocksdb_mismatches,
    rocksdb_types,
    workload,
)

from rmqarrow.testing.rocketmq import query_broker, resolve_release, run_broker, send_messages

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

RELEASES = ("5.4.0",)


@pytest.fixture(scope="module", params=RELEASES, ids=lambda v: f"rocketmq-{v}")
def rocksdb_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Run]:
    version = str(request.param)
    workdir = tmp_path_factory.mktemp(f"rocketmq-{version}-rocksdb")
    settings = {"indexRocksDBEnable": "true", "indexFileReadEnable": "false"}
    with run_broker(resolve_release(version), workdir, settings) as broker:
        sent = send_messages(broker, workload(0, 100), tag="batch0")
        assert {s.status for s in sent} == {"SEND_OK"}
        run = Run(broker, sent, None, True)
        run.answers = query_broker(broker, key_queries(run))
        yield run
    assert processes_naming(workdir) == []


def test_the_broker_answers_from_its_rocksdb_index(rocksdb_run: Run) -> None:
    assert rocksdb_run.broker.pids, "the broker is not running"
    uniq = [a for a in rocksdb_run.answers if a.query.kind == "uniq"]
    assert [a.offsets for a in uniq] == [(s.phy_offset,) for s in rocksdb_run.sent]
    tags = [a for a in rocksdb_run.answers if a.query.kind == "tag"]
    assert tags and all(a.offsets for a in tags)
    assert all(a.error is None for a in rocksdb_run.answers)


def test_read_after_a_clean_stop_and_the_type_letters(rocksdb_run: Run) -> None:
    """The same letters as 5.5.0: K per distinct key, U per message, T per message with
    tags; the broker writes its IndexFiles as well."""
    rocksdb_run.broker.stop()
    assert not (rocksdb_run.store / "abort").exists(), "the broker did not shut down cleanly"
    assert rocksdb_mismatches(rocksdb_run) == []
    assert rocksdb_types(rocksdb_run.store) == expected_rocksdb_types(rocksdb_run.sent)
    assert any((rocksdb_run.store / "index").iterdir())
