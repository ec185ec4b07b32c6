"""``rmqarrow verify``: every engine's answers checked against the native chained lookup,
with queries sampled from the index, mismatches explained by traced walks, and datasets
checked against the store they came from."""

from __future__ import annotations

from rmqarrow.verify.run import (
    Engine,
    EngineResult,
    Mismatch,
    VerifyReport,
    format_report,
    verify,
)

__all__ = ["Engine", "EngineResult", "Mismatch", "VerifyReport", "format_report", "verify"]
