"""The ``messages`` view in DuckDB: exact-key joins, the index checked against the log, and
export/import with the messages table (golden CommitLog store1 and its index)."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from golden_data import GOLDEN, golden_set
from rmqarrow.converters.arrow.messages import MESSAGES_SCHEMA, messages_table
from rmqarrow.converters.duckdb.sql import check_against_log, connect
from rmqarrow.converters.parquet.export import export_store
from rmqarrow.converters.parquet.importer import import_dataset
from rmqarrow.converters.parquet.manifest import read_manifest
from rmqarrow.converters.parquet.parts import table_parts

from rmqarrow import index_key_hash
from rmqarrow.cli import main
from rmqarrow.commitlog import index_records
from rmqarrow.errors import DatasetError, StoreNotFoundError
from rmqarrow.index.service import IndexService

G = golden_set("commitlog_store1")
COMMITLOG = GOLDEN / "commitlog" / "store1" / "commitlog"
GEOM = {"hash_slot_num": G.hash_slot_num, "index_num": G.index_num}
GEOM_ARGS = ["--hash-slot-num", str(G.hash_slot_num), "--index-num", str(G.index_num)]

Pair = tuple[str, str]


def _messages() -> list[dict[str, object]]:
    return messages_table(COMMITLOG).to_pylist()


def _expected_keys() -> dict[int, set[str]]:
    """What buildIndex puts for each message (rollbacks none), computed in Python."""
    out: dict[int, set[str]] = {}
    for m in _messages():
        if int(m["sys_flag"]) & 12 == 12:  # type: ignore[call-overload]
            continue
        keys = {f"{m['topic']}#{m['uniq_key']}"} if m["uniq_key"] else set()
        keys |= {f"{m['topic']}#{k}" for k in (m["keys"] or [])}  # type: ignore[attr-defined]
        out[int(m["physical_offset"])] = keys  # type: ignore[call-overload]
    return out


def _real_matches() -> dict[Pair, set[int]]:
    """(topic, key) -> offsets of the indexed messages whose topic and keys really match."""
    found: dict[Pair, set[int]] = defaultdict(set)
    for offset, keys in _expected_keys().items():
        for full in keys:
            topic, key = full.split("#", 1)
            found[(topic, key)].add(offset)
    return found


def _colliding(key: str) -> str | None:
    """Another key with the same Java hashCode (``..ab..`` -> ``..(a+1)(b-31)..``)."""
    for i in range(len(key) - 1):
        a, b = ord(key[i]), ord(key[i + 1])
        if 33 <= b - 31 <= 126 and a < 126:
            return key[:i] + chr(a + 1) + chr(b - 31) + key[i + 2 :]
    return None


def _pairs() -> list[Pair]:
    """Every real (topic, key) of the log, the golden queries' keys (some absent), and
    keys whose full index key has the hash of a real one (hash false positives)."""
    real = set(_real_matches())
    pairs = set(real)
    pairs |= {tuple(q.key.split("#", 1)) for q in G.queries}  # type: ignore[misc]
    pairs |= {("TopicTest", "no-such-key"), ("NoSuchTopic", "k1")}
    for topic, key in sorted(real)[:40]:
        other = _colliding(key)
        if other is not None and (topic, other) not in real:
            assert index_key_hash(f"{topic}#{other}") == index_key_hash(f"{topic}#{key}")
            pairs.add((topic, other))
    return sorted(pairs)


EXACT_SQL = """
SELECT q.topic, q.key, e.phy_offset
FROM _pairs q
JOIN entries e ON e.key_hash = index_key_hash(q.topic || '#' || q.key)
JOIN messages m ON m.physical_offset = e.phy_offset
WHERE m.topic = q.topic AND (m.uniq_key = q.key OR list_contains(m.keys, q.key))
"""

HASH_ONLY_SQL = """
SELECT q.topic, q.key, e.phy_offset
FROM _pairs q JOIN entries e ON e.key_hash = index_key_hash(q.topic || '#' || q.key)
"""


def _grouped(con: duckdb.DuckDBPyConnection, sql: str) -> dict[Pair, set[int]]:
    out: dict[Pair, set[int]] = defaultdict(set)
    for topic, key, offset in con.sql(sql).fetchall():
        out[(topic, key)].add(offset)
    return out


@pytest.fixture(params=["store", "dataset"])
def con(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with the messages view: store + commitlog=, or a dataset exported
    with its messages (view registered automatically)."""
    if request.param == "store":
        c = connect(G.store_dir, commitlog=COMMITLOG, **GEOM)
    else:
        out = tmp_path / "dataset"
        export_store(G.store_dir, out, commitlog=COMMITLOG, **GEOM)
        c = connect(out)
    yield c
    c.close()


def test_messages_view_rows(con: duckdb.DuckDBPyConnection) -> None:
    assert con.sql("SELECT count(*) FROM messages").fetchall() == [(300,)]
    got = con.sql("SELECT * FROM messages ORDER BY physical_offset").to_arrow_table()
    assert got.column_names == MESSAGES_SCHEMA.names
    want = messages_table(COMMITLOG)
    assert got.cast(MESSAGES_SCHEMA).equals(want)


def test_exact_key_join_equals_python(con: duckdb.DuckDBPyConnection) -> None:
    pairs = _pairs()
    con.register(
        "_pairs",
        pa.table({"topic": [p[0] for p in pairs], "key": [p[1] for p in pairs]}),
    )
    exact = _grouped(con, EXACT_SQL)
    want = _real_matches()
    assert {p: exact.get(p, set()) for p in pairs} == {p: want.get(p, set()) for p in pairs}
    # the hash-only join holds every real match; the join on the real key drops the rest
    hash_only = _grouped(con, HASH_ONLY_SQL)
    assert all(exact[p] <= hash_only[p] for p in exact)
    assert sum(map(len, hash_only.values())) > sum(map(len, exact.values())) > 0


def test_check_against_golden_log_is_clean(con: duckdb.DuckDBPyConnection) -> None:
    result = check_against_log(con)
    assert result["dangling"] == 0 and result["missing"] == 0
    assert result["dangling_examples"] == [] and result["missing_examples"] == []
    assert result["messages"] == 300
    assert result["expected_keys"] == sum(map(len, _expected_keys().values()))
    assert result["entries"] == len(G.puts)


def _build(store: Path, records: pa.Table) -> Path:
    with IndexService(store, G.hash_slot_num, G.index_num) as service:
        service.build_index_batch(records)
        service.flush()
    return store


def _records() -> pa.Table:
    return pa.Table.from_batches(list(index_records(COMMITLOG)))


def _victim(records: pa.Table) -> int:
    """The offset of a non-rollback record with UNIQ_KEY and several KEYS tokens."""
    for r in records.to_pylist():
        if r["sys_flag"] & 12 != 12 and r["uniq_key"] and r["keys"] and len(r["keys"].split()) > 1:
            return int(r["commit_log_offset"])
    raise AssertionError("no suitable record in the golden log")


def test_rebuilt_index_is_clean(tmp_path: Path) -> None:
    store = _build(tmp_path / "index", _records())
    with connect(store, commitlog=COMMITLOG, **GEOM) as c:
        result = check_against_log(c)
    assert (result["dangling"], result["missing"]) == (0, 0)


def test_missing_message_keys_reported(tmp_path: Path) -> None:
    records = _records()
    victim = _victim(records)
    keep = pc.not_equal(records.column("commit_log_offset"), victim)
    store = _build(tmp_path / "index", records.filter(keep))
    with connect(store, commitlog=COMMITLOG, **GEOM) as c:
        result = check_against_log(c, examples=100)
    want = sorted(_expected_keys()[victim])
    assert len(want) > 1
    assert result["dangling"] == 0
    assert result["missing"] == len(want)
    assert [(r["physical_offset"], r["key"]) for r in result["missing_examples"]] == [
        (victim, k) for k in want
    ]
    with connect(store, commitlog=COMMITLOG, **GEOM) as c:
        assert check_against_log(c, examples=1)["missing_examples"] == [
            result["missing_examples"][0]
        ]


def test_dangling_entries_reported(tmp_path: Path) -> None:
    """A record indexed at an offset where no message starts: its entries dangle and the
    real message's keys are missing."""
    records = _records()
    victim = _victim(records)
    offsets = records.column("commit_log_offset").to_pylist()
    moved = [o + 1 if o == victim else o for o in offsets]
    records = records.set_column(
        records.schema.get_field_index("commit_log_offset"),
        records.schema.field("commit_log_offset"),
        pa.array(moved, pa.int64()),
    )
    store = _build(tmp_path / "index", records)
    with connect(store, commitlog=COMMITLOG, **GEOM) as c:
        result = check_against_log(c, examples=100)
    n_keys = len(_expected_keys()[victim])
    assert result["dangling"] == n_keys
    assert {r["phy_offset"] for r in result["dangling_examples"]} == {victim + 1}
    assert result["missing"] == n_keys
    assert {r["physical_offset"] for r in result["missing_examples"]} == {victim}


def test_check_needs_messages(tmp_path: Path) -> None:
    with connect(G.store_dir, **GEOM) as c, pytest.raises(DatasetError, match="messages"):
        check_against_log(c)
    out = tmp_path / "plain"
    export_store(G.store_dir, out, **GEOM)
    assert not (out / "messages").exists()
    assert "messages" not in read_manifest(out)["tables"]
    with connect(out) as c, pytest.raises(duckdb.CatalogException):
        c.sql("SELECT * FROM messages").fetchall()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_with_commitlog_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    manifest = export_store(G.store_dir, out, commitlog=COMMITLOG, **GEOM)
    assert manifest["tables"]["messages"] == {"rows": 300, "commitlog": str(COMMITLOG.absolute())}
    assert read_manifest(out) == manifest
    assert [p.name for p in table_parts(out, "messages")] == ["part-00000.parquet"]
    assert pq.read_table(out / "messages" / "part-00000.parquet").num_rows == 300
    rebuilt = import_dataset(out, tmp_path / "rebuilt")
    assert [p.name for p in rebuilt] == list(G.files)
    for p, golden in zip(rebuilt, G.file_paths, strict=True):
        assert _digest(p) == _digest(golden)


def test_export_bad_commitlog_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    with pytest.raises(StoreNotFoundError):
        export_store(G.store_dir, out, commitlog=tmp_path / "nope", **GEOM)
    assert list(tmp_path.iterdir()) == []


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    out, _ = capsys.readouterr()
    return status, out


def test_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out = _run(
        capsys,
        "sql",
        str(G.store_dir),
        "SELECT count(*) AS n FROM messages",
        "--json",
        "--commitlog",
        str(COMMITLOG),
        *GEOM_ARGS,
    )
    assert status == 0 and json.loads(out)["rows"] == [{"n": 300}]
    status, out = _run(
        capsys, "stats", str(G.store_dir), "--json", "--commitlog", str(COMMITLOG), *GEOM_ARGS
    )
    check = json.loads(out)["log_check"]
    assert status == 0 and (check["dangling"], check["missing"], check["messages"]) == (0, 0, 300)
    status, out = _run(capsys, "stats", str(G.store_dir), "--json", *GEOM_ARGS)
    assert status == 0 and "log_check" not in json.loads(out)
    dataset = tmp_path / "dataset"
    status, out = _run(
        capsys,
        "export",
        str(G.store_dir),
        str(dataset),
        "--commitlog",
        str(COMMITLOG),
        "--json",
        *GEOM_ARGS,
    )
    assert status == 0 and json.loads(out)["messages"] == 300
    status, out = _run(capsys, "sql", str(dataset), "SELECT count(*) AS n FROM messages", "--json")
    assert status == 0 and json.loads(out)["rows"] == [{"n": 300}]


def test_expected_keys_sql_hashes_like_the_engine(con: duckdb.DuckDBPyConnection) -> None:
    """The by-hand SQL (hash macro) and the vectorized check see the same keys and hashes."""
    from rmqarrow.converters.duckdb.sql import EXPECTED_KEYS_SQL

    rows = con.sql(EXPECTED_KEYS_SQL).fetchall()
    assert {(o, k) for o, k, _ in rows} == {
        (o, k) for o, keys in _expected_keys().items() for k in keys
    }
    assert all(h == index_key_hash(k) for _, k, h in rows)
