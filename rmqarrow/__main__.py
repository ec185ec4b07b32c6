"""``python -m rmqarrow``."""

import sys

from rmqarrow.cli import main

sys.exit(main())
