"""``python -m rmqarrow``."""

import sys

try:
    from rmqarrow.cli import main
except KeyboardInterrupt:
    # Ctrl-C while the command line's modules import: one line and 130, as during a command
    sys.stderr.write("rmqarrow: interrupted\n")
    sys.exit(130)

sys.exit(main())
