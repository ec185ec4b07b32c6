"""The Spark sources' names and options, as Spark users spell them.

``rocketmq_index`` / ``rocketmq_commitlog`` (one token: unquoted in SQL's ``USING``), the
first hyphenated names still registered; camelCase options matched in any case (Spark
lower-cases them), RocketMQ's setting names as aliases, the former snake_case names read
with a warning, and anything else refused in one line naming the accepted options, the
closest first.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from golden_data import golden_set
from rmqarrow.converters.spark.options import accepted, parse

from rmqarrow.errors import InvalidValueError, UsageError

G = golden_set("basic")


def test_camel_case_options_in_any_case_and_their_aliases() -> None:
    path = str(G.store_dir)
    want = {"path": path, "hashSlotNum": 1000, "indexNum": 4000, "pieceRows": 9}
    given = {"path": path, "hashSlotNum": "1000", "indexNum": "4000", "pieceRows": "9"}
    assert parse(given, "index", "batch") == want
    # Spark hands the source lower-cased keys (CaseInsensitiveDict)
    assert parse({k.lower(): v for k, v in given.items()}, "index", "batch") == want
    rocketmq = {"path": path, "MAXHASHSLOTNUM": "1000", "maxIndexNum": "4000", "pieceRows": "9"}
    assert parse(rocketmq, "index", "batch") == want
    log = parse({"path": path, "mappedFileSizeCommitLog": "4096"}, "commitlog", "stream")
    assert log == {"path": path, "mappedFileSize": 4096}


def test_former_snake_case_names_still_read_with_a_warning() -> None:
    with pytest.warns(FutureWarning) as said:
        got = parse({"hash_slot_num": "8", "index_num": "101"}, "index", "stream")
    assert sorted(str(w.message) for w in said) == [
        "rocketmq_index: option hash_slot_num is deprecated; use hashSlotNum",
        "rocketmq_index: option index_num is deprecated; use indexNum",
    ]
    assert got == {"hashSlotNum": 8, "indexNum": 101}
    with pytest.warns(FutureWarning, match="mapped_file_size is deprecated; use mappedFileSize"):
        assert parse({"mapped_file_size": "64"}, "commitlog", "batch") == {"mappedFileSize": 64}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the documented names never warn
        parse({"hashSlotNum": "8", "indexNum": "101"}, "index", "stream")


@pytest.mark.parametrize("typo", ["hashSlotsNum", "hash_slots_num", "HashSlotNumber"])
def test_a_misspelt_option_is_refused_naming_the_closest_first(typo: str) -> None:
    with pytest.raises(UsageError) as err:
        parse({"path": "/x", typo.lower(): "8"}, "index", "batch")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(
        f"rocketmq_index: unknown option '{typo.lower()}'; rocketmq_index reads "
    )
    listed = text.split(" reads ", 1)[1].split(", ")
    assert listed[0] == "hashSlotNum"
    assert sorted(listed) == sorted(accepted("index", "batch"))


def test_options_of_the_other_source_or_mode_are_refused() -> None:
    with pytest.raises(UsageError, match=r"rocketmq_commitlog: unknown option 'hashslotnum'"):
        parse({"hashslotnum": "8"}, "commitlog", "batch")
    with pytest.raises(UsageError, match=r"option startingOffsets applies to spark\.readStream"):
        parse({"startingoffsets": "latest"}, "index", "batch")
    with pytest.raises(UsageError, match=r"option pushdown applies to spark\.read only"):
        parse({"pushdown": "true"}, "index", "stream")
    # while Spark asks for the schema it does not say which: both modes' options pass
    assert parse({"startingOffsets": "latest", "pushdown": "true"}, "index", None) == {
        "startingOffsets": "latest",
        "pushdown": True,
    }


def test_two_spellings_of_one_option_and_bad_values() -> None:
    with pytest.raises(UsageError, match="options hashslotnum and maxhashslotnum are one option"):
        parse({"hashslotnum": "8", "maxhashslotnum": "9"}, "index", "batch")
    with pytest.raises(InvalidValueError, match="option pieceRows must be a whole number"):
        parse({"pieceRows": "lots"}, "index", "batch")
    with pytest.raises(InvalidValueError, match="option batchRows must be positive, got 0"):
        parse({"batchRows": "0"}, "commitlog", "batch")
    with pytest.raises(InvalidValueError, match="option failOnDataLoss must be true or false"):
        parse({"failOnDataLoss": "yes"}, "index", "stream")


# --- through Spark --------------------------------------------------------------------


def _spark_line(err: BaseException) -> str:
    """The rmqarrow error's line out of Spark's exception text."""
    from rmqarrow.converters.spark.errors import translate

    return str(translate(err))


@pytest.mark.spark
def test_both_names_read_and_sql_uses_the_one_token_name(spark: Any, tmp_path: Path) -> None:
    from rmqarrow.converters.spark.source import register

    register(spark)
    store = str(G.store_dir)
    geo = {"hashSlotNum": str(G.hash_slot_num), "indexNum": str(G.index_num)}
    n = spark.read.format("rocketmq_index").options(**geo).load(store).count()
    assert n == len(G.puts)
    assert spark.read.format("rocketmq-index").options(**geo).load(store).count() == n
    assert spark.read.format("ROCKETMQ_INDEX").options(**geo).load(store).count() == n
    former = {"hash_slot_num": str(G.hash_slot_num), "index_num": str(G.index_num)}
    assert spark.read.format("rocketmq-index").options(**former).load(store).count() == n
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW idx USING rocketmq_index OPTIONS (path '{store}', "
        f"hashSlotNum {G.hash_slot_num}, maxIndexNum {G.index_num}, table 'files')"
    )
    assert spark.sql("SELECT count(*) FROM idx").collect()[0][0] == len(G.files)


@pytest.mark.spark
def test_the_commitlog_source_under_both_names(spark: Any, generated: Any) -> None:
    from rmqarrow.converters.spark.source import register

    register(spark)
    log = str((generated.root / "commitlog").absolute())
    n = spark.read.format("rocketmq_commitlog").load(log).count()
    assert n > 0
    assert spark.read.format("rocketmq-commitlog").option("batchRows", "7").load(log).count() == n


@pytest.mark.spark
def test_a_misspelt_option_fails_the_read_in_one_line(spark: Any) -> None:
    from rmqarrow.converters.spark.source import register

    register(spark)
    with pytest.raises(Exception) as err:
        spark.read.format("rocketmq_index").option("hashSlotsNum", "8").load(str(G.store_dir))
    line = _spark_line(err.value)
    assert re.search(r"unknown option 'hashslotsnum'; rocketmq_index reads hashSlotNum, ", line)
    assert "\n" not in line


@pytest.mark.spark
def test_create_table_is_refused_pointing_to_a_temporary_view(spark: Any) -> None:
    """Spark reads a catalog table of a Python data source without its options, so a
    table would fail on every query: refused when created, with the form that works."""
    from rmqarrow.converters.spark.source import register

    register(spark)
    with pytest.raises(Exception) as err:
        spark.sql(
            f"CREATE TABLE idx_table USING rocketmq_index OPTIONS (path '{G.store_dir}', "
            f"hashSlotNum {G.hash_slot_num}, indexNum {G.index_num})"
        )
    line = _spark_line(err.value)
    assert "use CREATE TEMPORARY VIEW name USING rocketmq_index OPTIONS" in line
    assert not spark.catalog.tableExists("idx_table")
