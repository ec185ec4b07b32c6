"""``rmqarrow verify``: every engine's answers checked against the native chained lookup,
with queries sampled from the index, mismatches explained by traced walks, and datasets
checked against the store they came from; and ``check``'s damage summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqarrow._lazy import lazy_attributes

if TYPE_CHECKING:
    from rmqarrow.tiered.verify import TieredVerifyReport, format_tiered_report, verify_tiered
    from rmqarrow.verify.fsck import damage_summary
    from rmqarrow.verify.run import (
        EngineResult,
        EngineUnderTest,
        Mismatch,
        VerifyReport,
        format_report,
        verify,
    )

__all__ = [
    "EngineResult",
    "EngineUnderTest",
    "Mismatch",
    "TieredVerifyReport",
    "VerifyReport",
    "damage_summary",
    "format_report",
    "format_tiered_report",
    "verify",
    "verify_tiered",
]

# names load when first used: importing the package (as the command line does) is cheap
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "EngineUnderTest": "run",
        "EngineResult": "run",
        "Mismatch": "run",
        "TieredVerifyReport": "rmqarrow.tiered.verify",
        "VerifyReport": "run",
        "damage_summary": "fsck",
        "format_report": "run",
        "format_tiered_report": "rmqarrow.tiered.verify",
        "verify": "run",
        "verify_tiered": "rmqarrow.tiered.verify",
    },
)
