"""Broker settings that turn on RocketMQ's tiered storage with its POSIX file backend.

The setting names and defaults were read from the ``MessageStoreConfig`` of the release's
``rocketmq-tiered-store`` jar (a dependency of ``rocketmq-broker``, so every 5.x release the
harness resolves has it on the broker's class path).  The broker hands its whole
configuration to the plug-in, so ``brokerClusterName``, ``brokerName`` and
``storePathRootDir`` are shared with the broker.

Where the files go:

- the local tiered index files (``IndexStoreFile``): ``<storePathRootDir>/tiered_index_file/``
- the uploaded index segments: :func:`tiered_index_segments` (under ``tieredStoreFilePath``)
- each queue's tiered CommitLog and ConsumeQueue:
  ``<tieredStoreFilePath>/<md5>_<cluster>/<broker>/<topic>/<queueId>/COMMIT_LOG/``
"""

from __future__ import annotations

from pathlib import Path

from rmqarrow.testing.rocketmq._broker import Broker
from rmqarrow.tiered.layout.naming import LOCAL_DIR_NAME, segment_dir

__all__ = ["tiered_index_local", "tiered_index_segments", "tiered_settings"]

#: the store plug-in that puts the tiered store in front of the broker's own store
TIERED_STORE_PLUGIN = "org.apache.rocketmq.tieredstore.TieredMessageStore"
#: the backend that writes the tier as plain files under ``tieredStoreFilePath``
POSIX_BACKEND = "org.apache.rocketmq.tieredstore.provider.PosixFileSegment"


def tiered_settings(
    folder: Path, *, hash_slot_num: int = 64, index_num: int = 256
) -> dict[str, str]:
    """Settings (for :func:`run_broker`) of a broker with tiered storage in ``folder``.

    - ``tieredStorageLevel=FORCE``: reads and key queries are answered from the tier only
      (the default, ``NOT_IN_DISK``, asks the tier only for times before the broker's own
      oldest message), so every query answer comes from the tiered index.
    - ``tieredStoreGroupCommit=false``: the dispatcher copies every new message to the tier
      on each of its rounds (20 s apart) instead of waiting for 4,096 messages or 30 s.
    - A small index file (``hash_slot_num`` x ``index_num``; the defaults are 5,000,000 x
      20,000,000, 680 MB a file), so that files fill up, roll over and get uploaded.  A
      file is uploaded (compacted into a segment) within 10 s of the next file's start,
      and every file at a clean shutdown.
    """
    return {
        "messageStorePlugIn": TIERED_STORE_PLUGIN,
        "tieredBackendServiceProvider": POSIX_BACKEND,
        "tieredStoreFilePath": str(folder),
        "tieredStorageLevel": "FORCE",
        "tieredStoreGroupCommit": "false",
        "tieredStoreIndexFileMaxHashSlotNum": str(hash_slot_num),
        "tieredStoreIndexFileMaxIndexNum": str(index_num),
    }


def tiered_index_local(broker: Broker) -> Path:
    """The broker's local tiered index files: ``<storePathRootDir>/tiered_index_file``."""
    return broker.store / LOCAL_DIR_NAME


def tiered_index_segments(broker: Broker) -> Path:
    """The folder of the broker's uploaded (compacted) tiered index segments."""
    s = broker.settings
    return segment_dir(s["tieredStoreFilePath"], s["brokerClusterName"], s["brokerName"])
