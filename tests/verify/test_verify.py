"""verify passes where every engine is right: golden stores and generated stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from golden_data import GoldenSet, golden_set

from rmqarrow.cli import main
from rmqarrow.verify import EngineUnderTest, verify


def test_golden_queries_agree_native_and_duckdb(golden: GoldenSet, tmp_path: Path) -> None:
    report = verify(
        golden.store_dir,
        engines=["native", "duckdb"],
        queries=golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert report.ok, report.to_dict()
    assert [e.engine for e in report.engines] == ["native", "duckdb"]
    assert report.engines[1].queries == len(golden.queries)
    assert report.engines[1].offsets_compared == sum(len(a) for a in golden.expected)
    assert not report.chain_damage


def test_golden_expected_answers_as_an_engine(golden: GoldenSet) -> None:
    """The Java answers themselves, plugged in as an engine, agree with the native one."""
    expected = EngineUnderTest("java-golden", lambda qs: golden.expected, "expected.tsv")
    report = verify(
        golden.store_dir,
        engines=["native", expected],
        queries=golden.queries,
        hash_slot_num=golden.hash_slot_num,
        index_num=golden.index_num,
    )
    assert report.ok and report.engines[1].mismatches == 0


def test_golden_sampled_with_dataset(tmp_path: Path) -> None:
    from rmqarrow.converters.parquet.export import export_store

    g = golden_set("random_public")
    ds = tmp_path / "ds"
    export_store(g.store_dir, ds, hash_slot_num=g.hash_slot_num, index_num=g.index_num)
    report = verify(
        g.store_dir,
        dataset=ds,
        engines=["native", "duckdb"],
        sample=150,
        hash_slot_num=g.hash_slot_num,
        index_num=g.index_num,
    )
    assert report.ok, report.to_dict()
    assert report.dataset_check is not None and report.dataset_check.files_checked == 6
    assert report.dataset_check.entries_sampled > 100
    assert report.engines[1].target == f"dataset {ds}"
    assert report.engines[1].offsets_compared > 0


def test_generated_store_with_keys_and_dataset(generated: Any, generated_dataset: Path) -> None:
    for keys in (generated.keys, None):
        report = verify(
            generated.store,
            dataset=generated_dataset,
            engines=["native", "duckdb"],
            keys=keys,
            sample=250,
            seed=5,
            hash_slot_num=generated.hash_slot_num,
            index_num=generated.index_num,
        )
        assert report.ok, report.to_dict()
        assert report.engines[1].offsets_compared > 100
        assert not report.mismatches and not report.chain_damage


def test_generated_store_duckdb_over_native_files(generated: Any) -> None:
    report = verify(
        generated.store,
        engines=["native", "duckdb"],
        sample=200,
        seed=11,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.ok
    assert report.engines[1].target == f"store {generated.store}"


def test_cli_verify_table_and_json(
    generated: Any, generated_dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = generated.root / "keys-cli.txt"
    keys.write_text("".join(k + "\n" for k in generated.keys[:500]), encoding="utf-8")
    # The demo geometry has the 1:4 ratio, so no geometry options are needed.
    status = main(
        [
            "verify",
            str(generated.store),
            "--dataset",
            str(generated_dataset),
            "--engines",
            "native,duckdb",
            "--keys",
            str(keys),
            "--sample",
            "60",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "offsets compared" in out and "mismatches" in out
    assert "dataset check:" in out and "OK: every engine agrees" in out
    status = main(
        [
            "verify",
            str(generated.store),
            "--engines",
            "native,duckdb",
            "--json",
            "--sample",
            "40",
            "--seed",
            "9",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert status == 0 and doc["ok"] and doc["queries"] == 40
    assert [e["engine"] for e in doc["engines"]] == ["native", "duckdb"]


def test_cli_verify_golden_queries_file(capsys: pytest.CaptureFixture[str]) -> None:
    g = golden_set("commitlog_store1")
    status = main(
        [
            "verify",
            str(g.store_dir),
            "--engines",
            "native,duckdb",
            "--queries",
            str(g.queries_path),
            "--escaped",
            "--hash-slot-num",
            str(g.hash_slot_num),
            "--index-num",
            str(g.index_num),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"{len(g.queries):,} given queries" in out


def test_cli_verify_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    g = golden_set("basic")
    assert main(["verify", str(g.store_dir), "--engines", "native,oracle"]) == 2  # usage
    assert "unknown oracle;" in capsys.readouterr().err
    assert main(["verify", str(g.store_dir / "nope")]) == 1
    assert "no such store directory" in capsys.readouterr().err


@pytest.mark.spark
def test_spark_agrees_on_golden_and_generated(
    spark: Any, generated: Any, generated_dataset: Path
) -> None:
    g = golden_set("rolling")
    report = verify(
        g.store_dir,
        engines=["native", "spark"],
        queries=g.queries,
        hash_slot_num=g.hash_slot_num,
        index_num=g.index_num,
    )
    assert report.ok, report.to_dict()
    assert report.engines[1].offsets_compared == sum(len(a) for a in g.expected)
    report = verify(
        generated.store,
        dataset=generated_dataset,
        engines=["native", "duckdb", "spark"],
        keys=generated.keys,
        sample=150,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.ok, report.to_dict()
    assert [e.status for e in report.engines] == ["reference", "ok", "ok"]


def test_dataset_given_as_store_is_refused(
    generated_dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", str(generated_dataset), "--engines", "native"]) == 2  # usage
    assert "verify needs the native store as the reference" in capsys.readouterr().err


def test_native_reference_releases_each_file_once_walked(
    generated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a thousand queries leave ~200 MB of every walked file mapped unless released: the
    # one-shot reference must release, or verify's memory grows with the store
    from rmqarrow.kernels import lookup

    seen: list[bool] = []
    real = lookup.query_offsets

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(bool(kwargs.get("release")))
        return real(*args, **kwargs)

    monkeypatch.setattr(lookup, "query_offsets", recording)
    report = verify(
        generated.store,
        engines=["native"],
        sample=50,
        seed=3,
        hash_slot_num=generated.hash_slot_num,
        index_num=generated.index_num,
    )
    assert report.ok
    assert seen and all(seen)
