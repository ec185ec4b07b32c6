"""Access to the golden fixtures in ``tests/golden`` (see PROVENANCE.md there)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rmqarrow.format.queries import Query, read_queries_tsv, unescape_text

GOLDEN = Path(__file__).parent / "golden"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
SET_NAMES = sorted(MANIFEST)


@dataclass(frozen=True)
class Put:
    key: str
    phy_offset: int
    store_timestamp: int


@dataclass(frozen=True)
class GoldenSet:
    name: str
    hash_slot_num: int
    index_num: int
    escaped: bool
    files: tuple[str, ...]

    @property
    def store_dir(self) -> Path:
        return GOLDEN / self.name

    @property
    def file_paths(self) -> list[Path]:
        return [self.store_dir / f for f in self.files]

    @property
    def puts(self) -> list[Put]:
        return _puts(self.name, self.escaped)

    @property
    def queries(self) -> list[Query]:
        return read_queries_tsv(GOLDEN / f"{self.name}.queries.tsv", escaped=self.escaped)

    @property
    def queries_path(self) -> Path:
        return GOLDEN / f"{self.name}.queries.tsv"

    @property
    def expected(self) -> list[list[int]]:
        return _expected(self.name)

    @property
    def expected_text(self) -> str:
        return (GOLDEN / f"{self.name}.expected.tsv").read_text()


@cache
def _puts(name: str, escaped: bool) -> list[Put]:
    out = []
    for line in (GOLDEN / f"{name}.input.tsv").read_text(encoding="utf-8").split("\n")[:-1]:
        key, offset, ts = line.split("\t")
        out.append(Put(unescape_text(key) if escaped else key, int(offset), int(ts)))
    return out


@cache
def _expected(name: str) -> list[list[int]]:
    lines = (GOLDEN / f"{name}.expected.tsv").read_text().split("\n")[:-1]
    return [[int(x) for x in line.split(",")] if line else [] for line in lines]


def golden_set(name: str) -> GoldenSet:
    m = MANIFEST[name]
    return GoldenSet(
        name, m["hash_slot_num"], m["index_num"], bool(m.get("escaped")), tuple(m["files"])
    )


ALL_SETS = [golden_set(n) for n in SET_NAMES]
