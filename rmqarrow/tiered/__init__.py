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
and Spark engines (:mod:`rmqarrow.tiered.duckdb`, :mod:`rmqarrow.tiered.spark`) must equal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.tiered._bulk import key_hashes
    from rmqarrow.tiered._chains import slot_chains, walk_chain
    from rmqarrow.tiered._check import TieredCheck, TieredFileCheck, check_tiered
    from rmqarrow.tiered._compacted import CompactedIndexFile
    from rmqarrow.tiered._geometry import local_geometry
    from rmqarrow.tiered._open import (
        FormDifference,
        TieredAnswer,
        answer_queries,
        folder_geometry,
        form_differences,
        open_file,
        open_tiered,
        tiered_file_paths,
    )
    from rmqarrow.tiered._rules import key_hash
    from rmqarrow.tiered._store import TieredIndexStore, merge_answers
    from rmqarrow.tiered._types import (
        AppendResult,
        FileStatus,
        IndexItem,
        TieredQuery,
        as_tiered_queries,
    )
    from rmqarrow.tiered._unsealed import TieredIndexFile
    from rmqarrow.tiered.layout.binary import (
        BEGIN_MAGIC,
        DEFAULT_HASH_SLOT_NUM,
        DEFAULT_INDEX_NUM,
        END_MAGIC,
        compacted_slot_num,
    )
    from rmqarrow.tiered.layout.naming import segment_dir, segment_file_name

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

# names load when first used: rmqarrow.format.detect imports the layout below this
# package, and importing the package (as the command line does) stays cheap
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "BEGIN_MAGIC": "layout.binary",
        "DEFAULT_HASH_SLOT_NUM": "layout.binary",
        "DEFAULT_INDEX_NUM": "layout.binary",
        "END_MAGIC": "layout.binary",
        "AppendResult": "_types",
        "CompactedIndexFile": "_compacted",
        "FileStatus": "_types",
        "FormDifference": "_open",
        "IndexItem": "_types",
        "TieredAnswer": "_open",
        "TieredCheck": "_check",
        "TieredFileCheck": "_check",
        "TieredIndexFile": "_unsealed",
        "TieredIndexStore": "_store",
        "TieredQuery": "_types",
        "answer_queries": "_open",
        "as_tiered_queries": "_types",
        "check_tiered": "_check",
        "compacted_slot_num": "layout.binary",
        "folder_geometry": "_open",
        "form_differences": "_open",
        "key_hash": "_rules",
        "key_hashes": "_bulk",
        "local_geometry": "_geometry",
        "merge_answers": "_store",
        "open_file": "_open",
        "open_tiered": "_open",
        "segment_dir": "layout.naming",
        "segment_file_name": "layout.naming",
        "slot_chains": "_chains",
        "tiered_file_paths": "_open",
        "walk_chain": "_chains",
    },
)
