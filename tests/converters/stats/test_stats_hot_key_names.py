"""``stats`` names each hot key hash from the CommitLog's messages when it has them: the
``topic#key`` texts whose index key hash is the row's, through the SQL path and through
the bounded passes over a dataset alike."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.converters.stats import sql as stats
from rmqarrow.converters.stats.html import render_html

import rmqarrow
from rmqarrow.demo import make_docs_workspace
from rmqarrow.kernels.hashing import index_key_hashes


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    make_docs_workspace(root)
    return root


def _names(s: stats.IndexStats) -> dict[int, str | None]:
    rows = s.hot_keys.to_pylist()
    return {int(r["key_hash"]): r["name"] for r in rows}


def test_hot_keys_are_named_from_the_messages(ws: Path) -> None:
    store = ws / "store"
    con = duckdb_sql.connect(store / "index", commitlog=store / "commitlog")
    s = stats.collect(con, top=5)
    names = _names(s)
    assert len(names) == 5 and all(names.values())
    for key_hash, name in names.items():
        assert name is not None and " " not in name  # one key for each of these hashes
        assert int(index_key_hashes(pa.array([name]))[0]) == key_hash
    page = render_html(s)
    assert "named from the CommitLog" in page
    assert all(f'<td class="l">{name}</td>' in page for name in names.values())


def test_without_messages_the_hashes_are_all_there_is(ws: Path) -> None:
    con = duckdb_sql.connect(ws / "store" / "index")
    s = stats.collect(con, top=5)
    assert "name" not in s.hot_keys.column_names
    assert "each is named" in render_html(s)


def test_the_bounded_passes_name_them_alike(ws: Path, tmp_path: Path) -> None:
    store = ws / "store"
    by_sql = _names(
        stats.collect(duckdb_sql.connect(store / "index", commitlog=store / "commitlog"), top=5)
    )
    ds = tmp_path / "ds"
    with rmqarrow.open(store) as opened:
        opened.export(ds, commitlog=store / "commitlog")
    streamed = stats.collect(duckdb_sql.connect(ds), dataset=ds, top=5)
    assert _names(streamed) == by_sql
