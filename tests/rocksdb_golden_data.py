"""The RocksDB golden sets (RocketMQ's RIP-82 index classes wrote them): paths and config."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden" / "rocksdb"


@dataclass(frozen=True)
class RocksDBSet:
    name: str
    max_msgs_num_batch: int
    max_query_days: int

    @property
    def dir(self) -> Path:
        return GOLDEN / self.name

    @property
    def db(self) -> Path:
        return self.dir / "db"

    def pairs(self) -> dict[str, list[tuple[bytes, bytes]]]:
        out: dict[str, list[tuple[bytes, bytes]]] = {"default": [], "timer": [], "trans": []}
        for line in (self.dir / "pairs.tsv").read_text().splitlines():
            cf, k, v = line.split("\t")
            out[cf].append((bytes.fromhex(k), bytes.fromhex(v)))
        return out


def _sets() -> list[RocksDBSet]:
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    return [
        RocksDBSet(name, s["max_msgs_num_batch"], s["max_rocksdb_index_query_days"])
        for name, s in sorted(manifest["sets"].items())
    ]


ALL_ROCKSDB = _sets()
