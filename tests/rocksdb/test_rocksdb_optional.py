"""The binding is an optional extra: without rocksdict, ``import rmqarrow`` works and a
RocksDB index is refused in one line naming the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from rocksdb_golden_data import ALL_ROCKSDB

SCRIPT = textwrap.dedent("""
    import importlib.abc, sys

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] == "rocksdict":
                raise ImportError("blocked for the test")
            return None

    sys.meta_path.insert(0, Block())
    import rmqarrow
    from rmqarrow.cli import main

    assert rmqarrow.open(sys.argv[1]).format == "rocksdb"  # detection needs no binding
    sys.exit(main(["info", sys.argv[1]]))
""")


def test_without_the_binding() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ALL_ROCKSDB[0].db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "pip install 'rmqarrow[rocksdb]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
