"""The shorter pass over older releases: the newest 4.9.x and 5.3.x that resolve, and 5.4.0.

Per release: a smaller workload, every key and unique key asked of the live broker and of
``rmqarrow query``; after a clean shutdown, what its index holds and how
``build --from-commitlog`` compares.  (4.9.8's broker and name server jars are not served
by the registry reached here; 4.9.7 is the newest 4.9.x that resolves.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_run import run
from rocketmq.workload import (
    Run,
    expected_kinds,
    index_kinds,
    mismatches,
    processes_naming,
    rebuild,
    start_run,
)

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

#: release -> whether it indexes topic#T#tags (established by test_what_it_indexes)
RELEASES = {"4.9.7": False, "5.3.3": False, "5.4.0": True}


@pytest.fixture(scope="module", params=sorted(RELEASES), ids=lambda v: f"rocketmq-{v}")
def release_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Run]:
    version = str(request.param)
    workdir = tmp_path_factory.mktemp(f"rocketmq-{version}")
    yield from start_run(version, workdir, tags=RELEASES[version], sizes=(100,))


def test_live_query_equals_the_broker(
    release_run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert release_run.broker.pids, "the broker is not running"
    uniq = [a for a in release_run.answers if a.query.kind == "uniq"]
    assert [a.offsets for a in uniq] == [(s.phy_offset,) for s in release_run.sent]
    assert mismatches(capsys, release_run, tmp_path) == []


def test_what_it_indexes(release_run: Run) -> None:
    release_run.broker.stop()
    assert processes_naming(release_run.broker.workdir) == []
    tags = RELEASES[release_run.broker.release.version]
    assert index_kinds(release_run.store) == expected_kinds(release_run.sent, tags=tags)


def test_clean_shutdown_then_check_and_rebuild(
    release_run: Run, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The rebuild with the release's rules (``--rocketmq-version``) is byte-identical,
    file by file (only the names differ: the broker names a file after the clock when it
    creates it); for 5.4.0 that takes the tag entries."""
    release_run.broker.stop()
    assert not (release_run.store / "abort").exists(), "the broker did not shut down cleanly"
    status, out, err = run(capsys, "check", str(release_run.store))
    assert status == 0, out + err
    version = release_run.broker.release.version
    rebuilt = rebuild(release_run.store, tmp_path, capsys, version=version)
    theirs = sorted((release_run.store / "index").iterdir())
    ours = sorted(rebuilt.iterdir())
    assert len(ours) == len(theirs) >= 2
    assert [p.read_bytes() for p in ours] == [p.read_bytes() for p in theirs]
