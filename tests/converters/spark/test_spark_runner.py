"""The one Spark runner: temporary views for a statement, always dropped.

The session is shared (``get_spark`` returns the same one), so a finished statement must
leave none of its inputs behind (after it answered, after it failed, after a Ctrl-C),
and an input never replaces a view the session already holds.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from rmqarrow.converters.spark.runner import run_arrow, temp_views

from rmqarrow.errors import UsageError

pytestmark = pytest.mark.spark


def views(spark: Any) -> set[str]:
    """The session's temporary views (lower case, as Spark names them)."""
    return {t.name for t in spark.catalog.listTables() if t.isTemporary}


def numbers(n: int) -> pa.Table:
    return pa.table({"n": pa.array(range(n), pa.int64())})


def test_run_arrow_answers_and_drops_its_views(spark: Any) -> None:
    before = views(spark)
    frame = spark.createDataFrame(numbers(3))
    got = run_arrow(
        spark,
        "SELECT sum(a.n) AS s, count(*) AS c FROM rt_a a JOIN rt_b b ON a.n = b.n",
        inputs={"rt_a": numbers(5), "rt_b": frame},
    )
    assert got.to_pylist() == [{"s": 3, "c": 3}]
    assert views(spark) == before


def test_views_are_dropped_after_an_error_and_a_keyboard_interrupt(spark: Any) -> None:
    from pyspark.errors import AnalysisException

    before = views(spark)
    with pytest.raises(AnalysisException):
        run_arrow(spark, "SELECT no_such_column FROM rt_a", inputs={"rt_a": numbers(2)})
    assert views(spark) == before
    with pytest.raises(KeyboardInterrupt), temp_views(spark, {"rt_a": numbers(2)}) as names:
        assert names == {"rt_a": "rt_a"} and "rt_a" in views(spark) - before
        raise KeyboardInterrupt
    assert views(spark) == before


def test_a_view_the_session_holds_is_refused_not_replaced(spark: Any) -> None:
    spark.sql("CREATE OR REPLACE TEMP VIEW rt_mine AS SELECT 42 AS mine")
    try:
        before = views(spark)
        with pytest.raises(UsageError) as err:
            run_arrow(
                spark,
                "SELECT * FROM rt_mine",
                inputs={"rt_free": numbers(1), "rt_mine": numbers(3)},
            )
        assert "holds rt_mine, which" in str(err.value)
        assert spark.sql("SELECT mine FROM rt_mine").collect()[0][0] == 42
        assert views(spark) == before
        # under fresh names the two never meet
        with temp_views(spark, {"rt_mine": numbers(3)}, fresh=True) as names:
            assert names["rt_mine"].startswith("_rmq_rt_mine_")
            assert spark.sql(f"SELECT count(*) FROM {names['rt_mine']}").collect()[0][0] == 3
            assert spark.sql("SELECT mine FROM rt_mine").collect()[0][0] == 42
        assert views(spark) == before
    finally:
        spark.catalog.dropTempView("rt_mine")
