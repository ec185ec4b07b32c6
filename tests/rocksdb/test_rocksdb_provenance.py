"""The RocksDB golden files are RocketMQ's, unchanged: every byte as the manifest says."""

from __future__ import annotations

import hashlib
import json

from rocksdb_golden_data import GOLDEN, RocksDBSet


def test_every_file_matches_the_manifest(rocksdb_set: RocksDBSet) -> None:
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    files = manifest["sets"][rocksdb_set.name]["files"]
    for rel, meta in files.items():
        data = (rocksdb_set.dir / rel).read_bytes()
        assert len(data) == meta["bytes"], rel
        assert hashlib.sha256(data).hexdigest() == meta["sha256"], rel
    present = {f"db/{p.name}" for p in rocksdb_set.db.iterdir()}
    assert present == {rel for rel in files if rel.startswith("db/")}
