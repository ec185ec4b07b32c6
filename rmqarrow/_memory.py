"""The process's memory limit, and the one line that names it when it is hit.

Under ``ulimit -v`` (``RLIMIT_AS``) or a small container, libraries fail with messages
that point elsewhere: llvmlite (numba) says it "could not find/load shared object file",
DuckDB aborts while starting its threads, Python raises a bare ``MemoryError``.  This
module reads the limit and words those failures as what they are.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import sys

from rmqarrow.errors import MemoryLimitError

__all__ = [
    "address_space_limit",
    "describe_limit",
    "duckdb_settings",
    "fit_allocators",
    "library_note",
    "memory_error",
    "memory_limit_message",
]

#: DuckDB's buffer limit defaults to 80 % of the machine's RAM, which ``ulimit -v`` does
#: not lower: past the limit its allocations fail instead of spilling to disk.  This share
#: of the limit leaves the rest to Python, numpy, pyarrow and DuckDB's own threads.
_DUCKDB_SHARE = 0.4
#: address space one DuckDB worker thread takes: its stack and a glibc malloc arena
#: (reserved, 64 MiB on 64-bit), with some room
_PER_THREAD = 80 << 20
#: free address space DuckDB needs to open a connection at all (below it, glibc aborts
#: the process while DuckDB sets up a thread: measured about 60 MiB fails, 90 MiB runs)
_DUCKDB_MIN_FREE = 80 << 20
#: set once a connection got settings: DuckDB keeps its reserved address space for the
#: process's later connections, which then start in what looks like no room
_duckdb_started = False


def address_space_limit() -> int | None:
    """The soft ``RLIMIT_AS`` of this process in bytes (None: unlimited or unknown)."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def describe_limit(limit: int | None = None) -> str:
    """``ulimit -v 1048576 (1.0 GiB of address space)``, or the container's memory."""
    limit = address_space_limit() if limit is None else limit
    if limit is None:
        return "the machine's or container's memory"
    return f"ulimit -v {limit // 1024} ({limit / (1 << 30):.1f} GiB of address space)"


def memory_limit_message(what: str) -> str:
    """One line: ``what`` ran out of memory, under which limit, and what to do."""
    return (
        f"{what} ran out of memory under {describe_limit()}; raise the limit "
        "(ulimit -v, the container's memory) or give the command less to do at once"
    )


def _mapped_now() -> int | None:
    """The address space this process has mapped now (``VmSize``), in bytes."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def fit_allocators() -> None:
    """Under an address-space limit, Arrow allocates with the system allocator.

    pyarrow's default allocator (mimalloc) reserves about 1 GiB of address space at its
    first allocation: under ``ulimit -v 1500000`` that left DuckDB too little to start
    (refused with "needs about 80 MiB"), whatever the command had to do.  The choice is
    read when pyarrow starts, so this must run before pyarrow is imported (the command
    line calls it first); later, it moves the default pool for what is allocated from
    then on.  A pool the user chose (``ARROW_DEFAULT_MEMORY_POOL``) is kept.
    """
    if address_space_limit() is None or "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.set_memory_pool(pa.system_memory_pool())


def library_note(exc: BaseException) -> str:
    """What a shared library failing to load under the limit says, in a few words:
    ``libllvmlite.so cannot be mapped`` (llvmlite's own text runs on over several
    sentences about what else it could mean)."""
    found = re.search(r"([\w.+-]+\.so(?:\.[\d.]+)?)", str(exc))
    return f"{found.group(1) if found else 'its shared library'} cannot be mapped"


#: what ``duckdb.connect(config=...)`` takes
DuckDBConfig = dict[str, str | bool | int | float | list[str]]


#: glibc's ``M_ARENA_MAX`` parameter of ``mallopt``
_M_ARENA_MAX = -8


def _cap_malloc_arenas() -> None:
    """Under an address-space limit, at most two malloc arenas (glibc).

    glibc gives threads that contend for the allocator arenas of their own, each
    reserving 64 MiB of address space, up to eight per core: on a busy machine DuckDB's
    and numba's threads then take hundreds of MiB of the limit that the settings did
    not count, and DuckDB aborts (exit 127) where the same command passed on a quiet
    one.  Two arenas bound that; elsewhere (other C libraries) nothing is changed.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(ctypes.c_int(_M_ARENA_MAX), ctypes.c_int(2))
    except (OSError, AttributeError):  # not glibc
        return


def duckdb_settings(threads: int | None = None) -> DuckDBConfig:
    """DuckDB settings that fit this process's address-space limit ({} without one).

    Under ``RLIMIT_AS`` DuckDB's defaults abort the process (exit 127, "cannot allocate
    memory for thread-local data") when a worker thread cannot get its stack and malloc
    arena, and let its buffers grow past the limit.  So: as many threads as the address
    space still free holds (one each needs about ``_PER_THREAD``; 1 means no worker
    thread at all), and a buffer limit of a share of the limit, past which DuckDB spills.
    With less free than DuckDB needs to start at all, :class:`MemoryLimitError` (one
    line) instead of the abort.
    """
    limit = address_space_limit()
    global _duckdb_started
    if limit is None:
        return {}
    fit_allocators()
    _cap_malloc_arenas()
    used = _mapped_now() or 0
    free = max(limit - used, 0)
    if used and free < _DUCKDB_MIN_FREE and not _duckdb_started:
        raise MemoryLimitError(
            f"DuckDB needs about {_DUCKDB_MIN_FREE >> 20} MiB of address space to start; "
            f"{describe_limit(limit)} leaves {free >> 20} MiB after loading: raise the "
            "limit (ulimit -v, the container's memory) or use the native engine"
        )
    cores = threads or os.cpu_count() or 1
    fit = max(1, min(cores, free // (2 * _PER_THREAD)))
    share = int(limit * _DUCKDB_SHARE)
    _duckdb_started = True
    return {"memory_limit": f"{max(share >> 20, 16)}MB", "threads": str(fit)}


#: what libraries say when the address-space limit stops them (lower case)
_SIGNS = (
    "failed to map segment",
    "cannot allocate memory",
    "out of memory",
    "could not find/load shared object",
    "std::bad_alloc",
    "allocation failure",
)


def memory_error(exc: BaseException, what: str = "the command") -> MemoryError | None:
    """``exc`` as one :class:`~rmqarrow.errors.MemoryLimitError` line when it is memory
    running out (a ``MemoryError``, DuckDB's ``OutOfMemoryException``, a shared library
    that cannot be mapped under ``ulimit -v``, ``ENOMEM``); None for anything else."""
    if isinstance(exc, MemoryLimitError):
        return exc
    text = " ".join(str(exc).split()).lower()
    limited = address_space_limit() is not None
    if (
        isinstance(exc, MemoryError)
        or type(exc).__name__ == "OutOfMemoryException"
        or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM)
        or (
            limited
            and isinstance(exc, ImportError | OSError)
            and any(sign in text for sign in _SIGNS)
        )
    ):
        detail = " ".join(str(exc).split())[:100]
        return MemoryLimitError(memory_limit_message(what) + (f" ({detail})" if detail else ""))
    return None
