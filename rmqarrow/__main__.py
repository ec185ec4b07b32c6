"""``python -m rmqarrow``."""

import sys

try:
    from rmqarrow.cli import main
except BaseException as exc:
    # Ctrl-C while the command line's modules import: one line and 130, as during a command
    # (Python wraps one that lands in a class's creation in a RuntimeError it causes)
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, KeyboardInterrupt):
        cause = cause.__cause__
    if cause is None:
        raise
    sys.stderr.write("rmqarrow: interrupted\n")
    sys.exit(130)

sys.exit(main())
