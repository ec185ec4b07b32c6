"""The small world the documentation's examples run in (``rmqarrow demo --docs-workspace``).

Every page uses the same example paths, so one workspace serves them all, and the test
suite runs every example in one made by :func:`make_docs_workspace`:

- ``store/``: a broker store root (``commitlog/``, ``index/``, ``checkpoint``) holding
  ``OrderTopic`` messages keyed ``order-N customer-M`` from 2024-03-01T00:00:00Z on;
- ``lake/idx``: the index exported to Parquet (with the ``messages`` table);
- ``messages.csv``: index records for ``rmqarrow build --from``;
- ``keys.txt``: full index keys, one a line; ``queries.tsv``: a query list;
- ``scratch/``: an empty folder for examples that write.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from rmqarrow.commitlog import CommitLogWriter, Message, index_records
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.demo.run import claim_new_dir, remove_created
from rmqarrow.index.service import IndexService

__all__ = [
    "DOCS_WORKSPACE",
    "HASH_SLOT_NUM",
    "INDEX_NUM",
    "MESSAGES",
    "START_MS",
    "make_docs_workspace",
    "uniq_key",
]

START_MS = 1_709_251_200_000  # 2024-03-01T00:00:00Z
MESSAGES = 3000
HASH_SLOT_NUM = 1000  # RocketMQ's 1:4 ratio, so commands fit the geometry by themselves
INDEX_NUM = 4000

#: what the workspace holds, path -> what it is (in the order they are made)
DOCS_WORKSPACE = {
    "store": "a broker's store root: commitlog/, index/, checkpoint",
    "store/index": "its index directory (RocketMQ's rolling IndexFiles)",
    "scratch": "an empty folder for examples that write",
    "lake/idx": "the index exported to Parquet, with the messages table",
    "messages.csv": "index records, for rmqarrow build --from",
    "keys.txt": "full index keys (TOPIC#KEY), one a line",
    "queries.tsv": "a query list: key, max results",
}


def uniq_key(i: int) -> str:
    """The RocketMQ-style unique key of message ``i``."""
    return f"C0A8000100002A9F{i:016X}"


def make_docs_workspace(root: str | Path) -> dict[str, Path]:
    """Write the documentation's example paths under ``root``, a new or empty directory.

    Returns each path of :data:`DOCS_WORKSPACE` under ``root``.  A run that fails (an exception,
    Ctrl-C) removes what it wrote, and ``root`` too when it made it; a directory that
    holds anything is refused before a byte is written.
    """
    root = Path(root)
    created = claim_new_dir(root, "the docs workspace is written into a new directory")
    try:
        _write(root)
    except BaseException:
        remove_created(root, created)
        raise
    return {name: root / name for name in DOCS_WORKSPACE}


def _write(root: Path) -> None:
    store = root / "store"
    commitlog = store / "commitlog"
    with CommitLogWriter(commitlog, mapped_file_size=256 * 1024) as w:
        for i in range(MESSAGES):
            # One broker clock step backwards, so the out-of-order rules have a case.
            ts = START_MS + i * 200 - (30_000 if i == 2000 else 0)
            w.append(
                Message(
                    topic="OrderTopic",
                    body=f"order {i}".encode(),
                    keys=[f"order-{i}", f"customer-{i % 97}"],
                    tags="TagA",
                    uniq_key=uniq_key(i),
                    born_timestamp=ts,
                    store_timestamp=ts,
                )
            )
    records = pa.Table.from_batches(list(index_records(commitlog)))
    with IndexService(store / "index", HASH_SLOT_NUM, INDEX_NUM) as service:
        service.build_index_batch(records)
        service.flush()
    (store / "checkpoint").write_bytes(bytes(4096))
    (root / "scratch").mkdir()
    export_store(store / "index", root / "lake" / "idx", commitlog=commitlog)
    pacsv.write_csv(records.slice(0, 200), root / "messages.csv")
    (root / "keys.txt").write_text(
        "".join(f"OrderTopic#order-{i}\n" for i in range(0, MESSAGES, 7)), encoding="utf-8"
    )
    (root / "queries.tsv").write_text(
        "OrderTopic#order-1\t32\nOrderTopic#customer-7\t64\nOrderTopic#no-such-key\t32\n",
        encoding="utf-8",
    )
