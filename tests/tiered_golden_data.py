"""Access to the tiered golden fixtures (tests/golden/tiered), decoded as their README says."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

TIERED = Path(__file__).parent / "golden" / "tiered"
MANIFEST = json.loads((TIERED / "manifest.json").read_text())
SET_NAMES = sorted(MANIFEST["sets"])

_ESCAPE = re.compile(r"\\(\\|t|n|r|x[0-9a-f]{2})")
_SIMPLE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def unescape(text: str) -> str:
    """README: ``\\\\``, ``\\t``, ``\\n``, ``\\r`` and ``\\xHH``; nothing else is escaped."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        return _SIMPLE[code] if code in _SIMPLE else chr(int(code[1:], 16))

    return _ESCAPE.sub(one, text)


@dataclass(frozen=True)
class Put:
    topic: str
    topic_id: int
    queue_id: int
    offset: int
    size: int
    keys: list[str]
    store_timestamp: int


@dataclass(frozen=True)
class Query:
    topic: str
    key: str
    max_count: int
    begin: int
    end: int


@dataclass(frozen=True)
class Answer:
    outcome: str
    items: list[tuple[int, ...]]


def _lines(path: Path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") or not text
    return [line.split("\t") for line in text.split("\n")[:-1]]


@dataclass(frozen=True)
class TieredSet:
    name: str

    @property
    def dir(self) -> Path:
        return TIERED / self.name

    @property
    def meta(self) -> dict[str, object]:
        m: dict[str, object] = MANIFEST["sets"][self.name]
        return m

    @property
    def hash_slot_num(self) -> int:
        return int(MANIFEST["sets"][self.name]["hash_slot_num"])

    @property
    def index_num(self) -> int:
        return int(MANIFEST["sets"][self.name]["index_num"])

    @property
    def file_timestamp(self) -> int:
        return int(MANIFEST["sets"][self.name]["file_timestamp"])

    @property
    def reopen_before_lines(self) -> list[int]:
        return list(MANIFEST["sets"][self.name]["reopen_before_lines"])

    @cached_property
    def puts(self) -> list[Put]:
        out = []
        for topic, tid, qid, off, size, count, keys, ts in _lines(self.dir / "input.tsv"):
            key_list = [] if int(count) == 0 else [unescape(k) for k in keys.split(" ")]
            assert len(key_list) == int(count)
            out.append(
                Put(unescape(topic), int(tid), int(qid), int(off), int(size), key_list, int(ts))
            )
        return out

    @cached_property
    def put_results(self) -> list[tuple[str, str, int, int]]:
        rows = _lines(self.dir / "put_results.tsv")
        assert [int(r[0]) for r in rows] == list(range(len(rows)))
        return [(r[1], r[2], int(r[3]), int(r[4])) for r in rows]

    @cached_property
    def queries(self) -> list[Query]:
        return [
            Query(unescape(t), unescape(k), int(m), int(b), int(e))
            for t, k, m, b, e in _lines(self.dir / "queries.tsv")
        ]

    @cached_property
    def expected(self) -> dict[str, list[Answer]]:
        out: dict[str, list[Answer]] = {"unsealed": [], "compacted": []}
        for i, (q, form, outcome, count, items) in enumerate(_lines(self.dir / "expected.tsv")):
            assert int(q) == i // 2 and form == ("unsealed", "compacted")[i % 2]
            parsed = [tuple(int(x) for x in it.split(",")) for it in items.split(";") if it]
            assert len(parsed) == int(count)
            out[form].append(Answer(outcome, parsed))
        return out


ALL_TIERED = [TieredSet(n) for n in SET_NAMES]
