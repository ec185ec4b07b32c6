"""One front door for every store: ``rmqarrow.open``.

Run it: ``python examples/front_door.py [WORKDIR]`` (a new temporary directory by default;
``--no-spark`` leaves Spark out).  It writes a small broker store (a CommitLog and the index
built from it), exports it, writes a folder of tiered index files, then opens each with
``rmqarrow.open`` and asks the same things: a key query, many queries as Arrow, a scan, the
same store in DuckDB and in Spark (``local[2]``), an export and a check.  Every answer is
compared with the native chained lookup; the script exits non-zero if any differs.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pyarrow.compute as pc

import rmqarrow
from rmqarrow.commitlog import CommitLogWriter, Message
from rmqarrow.tiered import TieredIndexStore

START_MS = 1_709_251_200_000  # 2024-03-01T00:00:00Z
MESSAGES = 2_000


def make_broker_store(root: Path) -> Path:
    """A broker store root: ``commitlog/`` written as the broker does, ``index/`` built."""
    store = root / "store"
    with CommitLogWriter(store / "commitlog", mapped_file_size=128 * 1024) as log:
        for i in range(MESSAGES):
            log.append(
                Message(
                    topic="OrderTopic",
                    body=f"order {i}".encode(),
                    keys=[f"order-{i}", f"customer-{i % 50}"],
                    uniq_key=f"C0A80001{i:024X}",
                    born_timestamp=START_MS + i,
                    store_timestamp=START_MS + 100 * i,
                )
            )
    # a small geometry at RocketMQ's 1:4 ratio, so the index rolls into several files
    rmqarrow.build(
        store / "index", commitlog=store / "commitlog", hash_slot_num=500, index_num=2_000
    )
    (store / "checkpoint").write_bytes(bytes(4096))
    return store


def make_tiered_folder(root: Path) -> Path:
    """A ``storePathRootDir`` with ``tiered_index_file/`` holding the same keys."""
    folder = root / "tiered"
    clock = iter(range(START_MS, START_MS + 10**9, 1000))
    with TieredIndexStore.open(
        folder, hash_slot_num=400, index_num=1_600, writable=True, clock=lambda: next(clock)
    ) as tiered:
        for i in range(MESSAGES):
            tiered.put_key(
                "OrderTopic", 1, i % 4, [f"order-{i}"], 1000 * i, 200, START_MS + 100 * i
            )
    return folder


def check(name: str, got: object, want: object) -> bool:
    ok = got == want
    print(f"  {'ok  ' if ok else 'DIFF'} {name}")
    return ok


def main(workdir: Path, spark: bool) -> int:
    store_root = make_broker_store(workdir)
    tiered_root = make_tiered_folder(workdir)
    keys = [("OrderTopic", f"order-{i}") for i in (0, 7, 1234, 1999)] + [
        ("OrderTopic", "customer-3"),
        ("OrderTopic", "no-such-key"),
    ]
    queries = [rmqarrow.Query(f"{t}#{k}", 64) for t, k in keys]
    ok = True

    print(f"broker store root {store_root}")
    with rmqarrow.open(store_root) as store:  # its index/ (and commitlog/ where used)
        native = [store.query(t, k) for t, k in keys]
        # the reference: the native chained lookup over the index files themselves
        ok &= check(
            "query = answer_queries", native, rmqarrow.answer_queries(store_root / "index", queries)
        )
        hits = store.query_many(queries)
        ok &= check("query_many rows", hits.num_rows, sum(len(a) for a in native))
        entries = store.scan(
            "entries",
            columns=["key_hash", "phy_offset"],
            filter=pc.field("key_hash") == rmqarrow.index_key_hash("OrderTopic#order-7"),
        ).read_all()
        found = set(entries["phy_offset"].to_pylist())
        ok &= check("scan finds order-7", set(native[1]) <= found, True)
        con = store.to_duckdb()
        duck = [
            [
                r[0]
                for r in con.execute(
                    "SELECT phy_offset FROM index_lookup(?, 64, 0, 9223372036854775807)", [q.key]
                ).fetchall()
            ]
            for q in queries
        ]
        con.close()
        ok &= check("DuckDB index_lookup = native", duck, native)
        ok &= check("DuckDB engine = native", store.answers(queries, engine="duckdb"), native)
        if spark:
            from rmqarrow.converters.spark import get_spark

            session = store.to_spark(get_spark("local[2]"))
            count = session.sql("SELECT count(*) AS n FROM entries").toArrow()["n"][0].as_py()
            ok &= check(
                "Spark sees every entry", count, sum(f["entries"] for f in store.info().files)
            )
            ok &= check("Spark engine = native", store.answers(queries, engine="spark"), native)
        manifest = store.export(workdir / "lake" / "idx")
        ok &= check(
            "export wrote every entry",
            manifest["tables"]["entries"]["rows"],
            sum(f["entries"] for f in store.info().files),
        )
        ok &= check("check: healthy", store.check().ok, True)
        file_count = len(store.info().files)

    print(f"exported dataset {workdir / 'lake' / 'idx'}")
    with rmqarrow.open(workdir / "lake" / "idx") as dataset:
        ok &= check("dataset query = native", [dataset.query(t, k) for t, k in keys], native)
        ok &= check("dataset scan rows", dataset.scan("files").read_all().num_rows, file_count)
        ok &= check("dataset check", dataset.check().ok, True)
        try:
            dataset.export(workdir / "again")
            ok &= check("export of a dataset is refused", "exported", "refused")
        except rmqarrow.UnsupportedOperationError as exc:
            print(f"  ok   export of a dataset is refused: {exc}")

    print(f"tiered folder {tiered_root}")
    with rmqarrow.open(tiered_root) as tiered:
        items = [tiered.query(t, k, max_num=8) for t, k in keys]
        ok &= check(
            "tiered DuckDB = native",
            tiered.answers([(t, k, 8, 0, 2**63 - 1) for t, k in keys], engine="duckdb"),
            items,
        )
        ok &= check("tiered scan items", tiered.scan("tiered_items").read_all().num_rows, MESSAGES)
        ok &= check("tiered check", tiered.check().ok, True)
        tiered.export(workdir / "lake" / "tiered")
    with rmqarrow.open(workdir / "lake" / "tiered") as tiered_dataset:
        ok &= check(
            "tiered dataset = native",
            [tiered_dataset.query(t, k, max_num=8) for t, k in keys],
            items,
        )
    print("every answer equals the native lookup" if ok else "DIFFERENCES FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--no-spark"]
    with_spark = "--no-spark" not in sys.argv[1:]
    if args:
        target = Path(args[0])
        target.mkdir(parents=True, exist_ok=True)
        sys.exit(main(target, with_spark))
    with tempfile.TemporaryDirectory(prefix="rmqarrow-front-door-") as tmp:
        sys.exit(main(Path(tmp), with_spark))
