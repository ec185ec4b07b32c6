"""RocketMQ's tiered-storage message-key index (RIP-65 ``IndexStoreFile``), byte-exact.

With tiered storage RocketMQ 5 indexes message keys in a local file of a 28-byte header,
8-byte hash slots and 32-byte items (:class:`TieredIndexFile`), compacts it into a
slot-clustered file when it uploads it (:class:`CompactedIndexFile`), and queries a folder
of both newest first (:class:`TieredIndexStore`).  This format is not the classic
``IndexFile`` of :mod:`rmqarrow`.  Every odd rule (``Integer.MIN_VALUE`` hashes, early
sealing, ``maxCount + 1`` answers, the 512-step and 1,024-item caps, the end timestamp reset
on reopen, ...) is listed in :mod:`rmqarrow.tiered._rules`.

Beyond RocketMQ: ``query_many`` (vectorized across queries), ``exact=True`` (every match,
no caps), :func:`form_differences` (queries whose answer changes on upload),
:func:`open_tiered` (open any path :func:`rmqarrow.format.detect.detect` calls tiered,
geometry found from the file), and :func:`answer_queries`, the native reference the DuckDB
and Spark engines (:mod:`rmqarrow.converters.duckdb.tiered`, ``...spark.tiered``) must equal.
"""

from __future__ import annotations

from rmqarrow.format.tiered_layout import (
    BEGIN_MAGIC,
    DEFAULT_HASH_SLOT_NUM,
    DEFAULT_INDEX_NUM,
    END_MAGIC,
    compacted_slot_num,
)
from rmqarrow.format.tiered_naming import segment_dir, segment_file_name

from ._bulk import key_hashes
from ._chains import slot_chains, walk_chain
from ._check import TieredCheck, TieredFileCheck, check_tiered
from ._compacted import CompactedIndexFile
from ._geometry import local_geometry
from ._open import (
    FormDifference,
    TieredAnswer,
    answer_queries,
    folder_geometry,
    form_differences,
    open_file,
    open_tiered,
    tiered_file_paths,
)
from ._rules import key_hash
from ._store import TieredIndexStore, merge_answers
from ._types import AppendResult, FileStatus, IndexItem, TieredQuery, as_tiered_queries
from ._unsealed import TieredIndexFile

__all__ = [
    "BEGIN_MAGIC",
    "DEFAULT_HASH_SLOT_NUM",
    "DEFAULT_INDEX_NUM",
    "END_MAGIC",
    "AppendResult",
    "CompactedIndexFile",
    "FileStatus",
    "FormDifference",
    "IndexItem",
    "TieredAnswer",
    "TieredCheck",
    "TieredFileCheck",
    "TieredIndexFile",
    "TieredIndexStore",
    "TieredQuery",
    "answer_queries",
    "as_tiered_queries",
    "check_tiered",
    "compacted_slot_num",
    "folder_geometry",
    "form_differences",
    "key_hash",
    "key_hashes",
    "local_geometry",
    "merge_answers",
    "open_file",
    "open_tiered",
    "segment_dir",
    "segment_file_name",
    "slot_chains",
    "tiered_file_paths",
    "walk_chain",
]
