"""Records put into a store's index as a broker does, for tests of readers that follow it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

#: A small geometry: 100 entries a file (2 a record: its key and its unique key).
SLOTS, INDEX = 8, 101


def append_records(store: Path, a: int, b: int) -> None:
    """Records ``a .. b-1`` (topic ``T``, keys ``k0`` .. ``k6``, unique keys ``u<i>``) put
    into the index of ``store`` through :class:`~rmqarrow.index.service.IndexService`."""
    from rmqarrow.index.service import IndexService

    s = IndexService(str(store), SLOTS, INDEX, 1 << 20)
    s.load()
    s.build_index_batch(
        pa.table(
            {
                "topic": ["T"] * (b - a),
                "keys": [f"k{i % 7}" for i in range(a, b)],
                "uniq_key": [f"u{i}" for i in range(a, b)],
                "commit_log_offset": pa.array([1000 + 100 * i for i in range(a, b)], pa.int64()),
                "store_timestamp": pa.array(
                    [1_700_000_000_000 + i for i in range(a, b)], pa.int64()
                ),
                "sys_flag": pa.array([0] * (b - a), pa.int32()),
            }
        )
    )
    s.close()
