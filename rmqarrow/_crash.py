"""Named crash points: where the crash tests kill a writer, on its real code path.

Writers call :func:`crash_point` with a step name (``"put:entries"``, ``"export:parts"``,
...) between the writes that matter.  Normally it does nothing (one comparison with an
empty name).  When the environment variable ``RMQARROW_CRASH_AT`` names the step, the
process sends itself SIGKILL there, as power loss or the OOM killer would: no cleanup,
no ``finally``.  ``RMQARROW_CRASH_AT=step@N`` kills at the N-th visit (1-based).
``RMQARROW_CRASH_SIGNAL`` picks another signal: ``int`` (SIGINT, as Ctrl-C: Python raises
``KeyboardInterrupt`` and the writer's own cleanup runs) or ``term`` (SIGTERM, as a
service manager stops it) or ``stop`` (SIGSTOP: the writer freezes where it is, holding
what it holds, until SIGCONT; how the lock tests keep a writer mid-write).  Only tests
set them; they are read once, at import.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "SIGNAL_ENV", "crash_point"]

ENV = "RMQARROW_CRASH_AT"
SIGNAL_ENV = "RMQARROW_CRASH_SIGNAL"
_SIGNALS = {
    "kill": signal.SIGKILL,
    "int": signal.SIGINT,
    "term": signal.SIGTERM,
    "stop": signal.SIGSTOP,
}
_signal = _SIGNALS.get(os.environ.get(SIGNAL_ENV, "kill"), signal.SIGKILL)
_spec = os.environ.get(ENV, "")
_step, _, _nth = _spec.partition("@")
_left = int(_nth) if _nth.isdigit() else 1


def crash_point(step: str) -> None:
    """SIGKILL this process (or the ``RMQARROW_CRASH_SIGNAL``) when ``RMQARROW_CRASH_AT``
    names ``step`` (tests only)."""
    global _left
    if step != _step:
        return
    _left -= 1
    if _left == 0:  # once: a signal that is handled must not fire again in the cleanup
        # SIGINT: Python raises KeyboardInterrupt in the main thread at its next bytecode
        os.kill(os.getpid(), _signal)
