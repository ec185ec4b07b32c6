"""Under a memory limit (``ulimit -v``, RLIMIT_AS) failures name the limit: numba that
cannot load falls back to the numpy kernels with a note, DuckDB gets settings that fit,
and what still runs out is one :class:`MemoryLimitError` line naming the limit.

Every case runs in a real subprocess whose RLIMIT_AS is set before anything is imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

_PRELUDE = """
import json, logging, resource, sys
limit = int(sys.argv[1]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
"""


def _run(mib: int, body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PRELUDE + body, str(mib)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_numba_that_cannot_load_falls_back_to_numpy_with_a_note() -> None:
    """300 MiB: llvmlite cannot map its library ("could not find/load shared object"); the
    kernels are numpy's, the answers the same, and the note names the limit."""
    done = _run(
        300,
        """
from rmqarrow.kernels._compiled import kernel_name
from rmqarrow.kernels.hashing import index_key_hashes
print(json.dumps({"kernels": kernel_name(),
                  "hashes": index_key_hashes(["Aa", "BB", "polygenelubricants"]).tolist()}))
""",
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"kernels": "numpy", "hashes": [2112, 2112, 0]}
    note = [ln for ln in done.stderr.splitlines() if ln.startswith("rmqarrow._optional")]
    assert len(note) == 1 and "ulimit -v 307200" in note[0] and "numpy kernels" in note[0]


def test_duckdb_answers_within_the_limit() -> None:
    """A DuckDB lookup over a store under a 1.5 GiB limit: settings that fit the limit."""
    done = _run(
        1536,
        f"""
from rmqarrow._memory import duckdb_settings
from rmqarrow.converters.duckdb import sql as duckdb_sql
from rmqarrow.format.queries import read_queries_tsv
qs = read_queries_tsv({str(GOLDEN / "rolling.queries.tsv")!r})
settings = duckdb_settings()
answers = [duckdb_sql.answer_queries({str(GOLDEN / "rolling")!r}, qs, hash_slot_num=16,
                                     index_num=32) for _ in range(3)]  # later ones too
print(json.dumps({{"settings": settings, "answers": answers}}))
""",
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["settings"]["memory_limit"] == "614MB"
    expected = [
        [int(x) for x in ln.split(",") if x]
        for ln in (GOLDEN / "rolling.expected.tsv").read_text().split("\n")[:-1]
    ]
    assert got["answers"] == [expected] * 3


def test_running_out_is_one_line_naming_the_limit() -> None:
    """What still runs out (a Python allocation, DuckDB's allocator) becomes one
    MemoryLimitError line naming ``ulimit -v``; other errors are left alone."""
    done = _run(
        450,
        """
import duckdb, numpy, pyarrow  # loaded, as by every command before it queries
from rmqarrow._memory import memory_error
from rmqarrow.errors import MemoryLimitError, RmqArrowError
lines = []
try:
    bytearray(1 << 30)
except MemoryError as exc:
    lines.append(str(memory_error(exc, "reading the store")))
from rmqarrow._memory import duckdb_settings
try:  # DuckDB's default threads abort here (exit 127): the settings fit the limit
    con = duckdb.connect(config=duckdb_settings())
    con.execute("SELECT count(*), sum(hash(i)) FROM range(3000000) t(i)").fetchall()
    lines.append("no error")
except (duckdb.Error, MemoryLimitError) as exc:
    err = memory_error(exc, "the DuckDB query")
    lines.append(str(err) if isinstance(err, MemoryLimitError) else f"other: {exc}")
assert memory_error(ValueError("x")) is None
assert isinstance(memory_error(MemoryError()), MemoryError)
assert issubclass(MemoryLimitError, RmqArrowError)
print(json.dumps(lines))
""",
    )
    assert done.returncode == 0, done.stderr
    lines = json.loads(done.stdout.strip().splitlines()[-1])
    assert lines[0].startswith("reading the store ran out of memory under ulimit -v 460800")
    # too little is left after loading for DuckDB to start: said before it would abort
    assert lines[1].startswith(
        "DuckDB needs about 80 MiB of address space to start; "
        "ulimit -v 460800 (0.4 GiB of address space) leaves"
    )
    assert all("\n" not in line for line in lines)
