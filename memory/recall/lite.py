"""Searches of an embedded Milvus Lite served by this process, without the loop-back gRPC hop
(protobuf both ways, a thread hand-over per query): `EvidenceIndex` calls the `Collection.search`
Lite's Search handler calls, on the same rows. Writes stay on pymilvus, and so does a search when the
file's server is not in this process (`local_collection` is None).
"""

from __future__ import annotations

import hashlib
import os


def local_collection(uri: str, name: str):
    """The in-process Lite `Collection` behind `name` of the Lite file `uri`, or None."""
    if "://" in uri:
        return None
    from milvus_lite.server_manager import server_manager_instance  # the recall extra, with pymilvus

    servers = getattr(server_manager_instance, "_servers", None)
    entry = servers.get(os.path.abspath(uri)) if isinstance(servers, dict) else None
    if not entry or len(entry) < 2:
        return None
    db = entry[1]
    if getattr(db, "closed", True) or not db.has_collection(name):
        return None
    return db.get_collection(name)


def subject_partitions(collection, subject_id: int) -> list[str] | None:
    """The one partition holding the subject's rows in a Lite collection, or None (search them all).
    Lite 3.x buckets a partition key by md5(str(value)) but, unlike a server, does not route a
    filtered search to the bucket; the rule is Lite's (pinned in pyproject.toml)."""
    key = getattr(collection, "_partition_key_field", None)
    buckets = getattr(collection, "_num_partition_buckets", None)
    if key != "subject_id" or not isinstance(buckets, int) or buckets < 1:
        return None
    from milvus_lite.constants import PARTITION_KEY_BUCKET_PREFIX

    h = int(hashlib.md5(str(subject_id).encode()).hexdigest(), 16) % buckets  # noqa: S324 - Lite's rule
    name = f"{PARTITION_KEY_BUCKET_PREFIX}{h}"
    return [name] if collection.has_partition(name) else None
