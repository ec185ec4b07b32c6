"""Where RocketMQ puts uploaded index segments (POSIX backend) and how it names them.

An uploaded index file becomes a segment of the flat file ``<broker>/rmq_sys_INDEX/0``; its
base offset is the total size of the earlier segments.  The POSIX backend stores it as
``<root>/<md5(cluster)[:8]>_<cluster>/<broker>/rmq_sys_INDEX/0/INDEX/<name>`` where the name
is the first 8 hex digits of ``md5(str(base_offset))`` followed by the base offset in 20
digits.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from rmqarrow._store_folders import TIERED_LOCAL_DIR_NAME

__all__ = [
    "COMPACTING_DIR_NAME",
    "INDEX_TOPIC",
    "LOCAL_DIR_NAME",
    "parse_segment_name",
    "segment_dir",
    "segment_file_name",
]

#: The local files' folder under ``storePathRootDir`` (and its ``compacting/`` subfolder).
LOCAL_DIR_NAME = TIERED_LOCAL_DIR_NAME
COMPACTING_DIR_NAME = "compacting"
INDEX_TOPIC = "rmq_sys_INDEX"

_SEGMENT_NAME = re.compile(r"[0-9a-f]{8}([0-9]{20})")


def _md5_prefix(text: str) -> str:
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:8]


def segment_dir(
    tiered_store_file_path: str | os.PathLike[str], cluster_name: str, broker_name: str
) -> Path:
    """The folder holding a broker's uploaded index segments."""
    root = Path(tiered_store_file_path)
    cluster = f"{_md5_prefix(cluster_name)}_{cluster_name}"
    return root / cluster / broker_name / INDEX_TOPIC / "0" / "INDEX"


def segment_file_name(base_offset: int) -> str:
    """The file name of the segment starting at ``base_offset``."""
    return f"{_md5_prefix(str(base_offset))}{base_offset:020d}"


def parse_segment_name(name: str) -> int | None:
    """The base offset a segment file name states, or None for another name."""
    m = _SEGMENT_NAME.fullmatch(name)
    if m is None or segment_file_name(int(m.group(1))) != name:
        return None
    return int(m.group(1))
