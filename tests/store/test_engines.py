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
    with pytest.raises(UsageError, match="tiered-index option"):
        answer_with_engine("native", ".", [], exact=True)


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
