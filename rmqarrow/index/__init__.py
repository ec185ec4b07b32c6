"""The native index: ``IndexFile`` (one file), ``IndexService`` (a rolling directory),
the batch build, and salvage after an abnormal exit."""

from __future__ import annotations

from rmqarrow.index.indexfile import IndexFile
from rmqarrow.index.service import IndexService, QueryOffsetResult, answer_queries, open_healthy

__all__ = ["IndexFile", "IndexService", "QueryOffsetResult", "answer_queries", "open_healthy"]
