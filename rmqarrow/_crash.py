"""Named crash points: where the crash tests kill a writer, on its real code path.

Writers call :func:`crash_point` with a step name (``"put:entries"``, ``"export:parts"``,
...) between the writes that matter.  Normally it does nothing (one comparison with an
empty name).  When the environment variable ``RMQARROW_CRASH_AT`` names the step, the
process sends itself SIGKILL there, as power loss or the OOM killer would: no cleanup,
no ``finally``.  ``RMQARROW_CRASH_AT=step@N`` kills at the N-th visit (1-based).
Only tests set it; it is read once, at import.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "crash_point"]

ENV = "RMQARROW_CRASH_AT"
_spec = os.environ.get(ENV, "")
_step, _, _nth = _spec.partition("@")
_left = int(_nth) if _nth.isdigit() else 1


def crash_point(step: str) -> None:
    """SIGKILL this process when ``RMQARROW_CRASH_AT`` names ``step`` (tests only)."""
    global _left
    if step != _step:
        return
    _left -= 1
    if _left <= 0:
        os.kill(os.getpid(), signal.SIGKILL)
