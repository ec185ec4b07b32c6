"""The toy format's store: the verbs it answers, declared, over the engines registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads

from rmqarrow import Verb
from rmqarrow.engines import answer_with_engine
from rmqarrow.store import Store
from toy_format.layout import read


@dataclass(frozen=True)
class ToyInfo:
    path: str
    entries: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "entries": self.entries}


class ToyStore(Store):
    format = "toy"  # type: ignore[assignment]
    tables = ("entries",)
    verbs = frozenset({Verb.QUERY, Verb.SCAN, Verb.INFO})

    def query(
        self,
        topic: str,
        key: str,
        *,
        begin: int = 0,
        end: int = 2**63 - 1,
        max_num: int = 64,
        engine: str | None = None,
    ) -> list[Any]:
        self._check_open()
        (answer,) = answer_with_engine(
            engine or "native", self.path, [(topic, key, max_num, begin, end)], fmt="toy"
        )
        return answer

    def scan(
        self,
        table: str,
        *,
        columns: list[str] | None = None,
        filter: pads.Expression | None = None,
    ) -> pa.RecordBatchReader:
        self._check_open()
        self._check_table(table, columns)
        data = pads.dataset(read(self.path)).to_table(columns=columns, filter=filter)
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())

    def info(self, *, chains: bool = True) -> ToyInfo:
        self._check_open()
        return ToyInfo(str(self.path), read(self.path).num_rows)
