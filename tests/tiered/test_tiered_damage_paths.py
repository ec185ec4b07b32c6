"""Byte damage through every new path: export/import, DuckDB, the bulk walk, detection.

Each path either gives an answer or raises an rmqarrow error; never a hang or another
exception.  Where both succeed, DuckDB equals the native lookup and the round trip is
byte-identical, damaged bytes included.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tiered_golden_data import TieredSet

from rmqarrow.errors import RmqArrowError, TieredReadError
from rmqarrow.format.detect import detect
from rmqarrow.tiered import answer_queries
from rmqarrow.tiered.duckdb import answer_queries as duck_answers
from rmqarrow.tiered.parquet.export import export_tiered
from rmqarrow.tiered.parquet.importer import import_tiered

BASIC = TieredSet("tiered_basic")


def damaged(src: Path, dst: Path, rng: random.Random) -> Path:
    data = bytearray(src.read_bytes())
    for _ in range(rng.choice((1, 4, 32))):
        where = rng.choice(
            (rng.randrange(28), rng.randrange(28, 28 + 8 * 100), rng.randrange(len(data)))
        )
        data[where] = rng.randrange(256)
    dst.write_bytes(bytes(data))
    return dst


def agree(a: list[object], b: list[object]) -> bool:
    return all(
        (isinstance(x, TieredReadError) and isinstance(y, TieredReadError)) or x == y
        for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("form", ["unsealed", "compacted"])
def test_random_damage_every_path(form: str, tmp_path: Path) -> None:
    rng = random.Random(f"tiered-{form}")
    qs = [(q.topic, q.key, q.max_count, q.begin, q.end) for q in BASIC.queries][:60]
    geometry = {"hash_slot_num": 100, "index_num": 400} if form == "unsealed" else {}
    for trial in range(16):
        path = damaged(BASIC.dir / f"{form}.bin", tmp_path / f"{trial}.bin", rng)
        detect(path)  # never raises on damage
        try:
            native = answer_queries(path, qs, **geometry)  # type: ignore[arg-type]
        except RmqArrowError:
            native = None
        try:
            duck = duck_answers(path, qs, **geometry)  # type: ignore[arg-type]
        except RmqArrowError:
            duck = None
        if native is not None and duck is not None:
            assert agree(native, duck), trial  # type: ignore[arg-type]
        try:
            export_tiered(path, tmp_path / f"ds{trial}", **geometry)  # type: ignore[arg-type]
        except RmqArrowError:
            continue
        (out,) = import_tiered(tmp_path / f"ds{trial}", tmp_path / f"out{trial}")
        assert out.read_bytes() == path.read_bytes()
