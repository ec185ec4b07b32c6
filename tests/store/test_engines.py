"""The engine registry: one table of (format, engine), one contract per format."""

from __future__ import annotations

import inspect

import pytest
from golden_data import golden_set
from tiered_golden_data import TieredSet

from rmqarrow.engines import ENGINES, FORMATS, answer_with_engine, get_engine
from rmqarrow.errors import UsageError
from rmqarrow.format.layout import Geometry


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "spark"])
def test_every_registered_engine_follows_its_format_contract(fmt: str, engine: str) -> None:
    fn = get_engine(fmt, engine)
    params = inspect.signature(fn).parameters
    if fmt == "rocksdb":
        assert {"max_msgs_num_batch", "max_query_days", "now"} <= set(params)
        assert "geometry" not in params  # the RocksDB index has no geometry
        return
    assert "geometry" in params
    if fmt == "tiered":
        assert "exact" in params


def test_unknown_names_are_refused_with_the_choices() -> None:
    with pytest.raises(UsageError, match="choose from native, duckdb, spark"):
        get_engine("index", "sqlite")
    with pytest.raises(UsageError, match="choose from index, tiered"):
        get_engine("rocks", "native")
    # each format's engines take the options its registry entry names, and no other
    with pytest.raises(UsageError, match=r"^exact=: not an option of the index format's "):
        answer_with_engine("native", ".", [], exact=True)
    with pytest.raises(UsageError, match=r"take geometry=, snapshot= \(exact= is the tiered"):
        answer_with_engine("native", ".", [], exact=True)
    with pytest.raises(UsageError, match="rocksdb format's engines, which take max_msgs_num"):
        answer_with_engine("native", ".", [], fmt="rocksdb", geometry=Geometry(4, 16))
    with pytest.raises(UsageError, match=r"oops=: not an option .* which take exact=, geometry="):
        answer_with_engine("native", ".", [], fmt="tiered", oops=1)
    # an option given as None is one not given
    compacted = TieredSet("tiered_collisions").dir / "compacted.bin"
    assert answer_with_engine("native", compacted, [], fmt="tiered", max_query_days=None) == []


def test_one_answer_shape_per_format() -> None:
    g = golden_set("collisions")
    for engine in ("native", "duckdb"):
        got = answer_with_engine(
            engine, g.store_dir, g.queries, geometry=Geometry(g.hash_slot_num, g.index_num)
        )
        assert got == g.expected and all(isinstance(a, list) for a in got)
    t = TieredSet("tiered_collisions")
    qs = [(q.topic, q.key, q.max_count, q.begin, q.end) for q in t.queries][:30]
    answers = [
        answer_with_engine(e, t.dir / "compacted.bin", qs, fmt="tiered")
        for e in ("native", "duckdb")
    ]
    assert answers[0] == answers[1]
