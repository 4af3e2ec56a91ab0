"""Searches of an embedded Milvus Lite served by this process, without the loop-back gRPC hop.

pymilvus opens a Lite file by starting Lite's gRPC server in a thread of this process and talking
to it over 127.0.0.1: protobuf both ways and a thread hand-over per query (`bench/bench_query.py`
reports both ways). The file is locked to one process, so that server's `Collection` objects are
the only ones: `search` calls the `Collection.search` its Search handlers call, with the same
arguments, and reads the same rows. Writes and every other client stay on pymilvus; when the
file's server is not found in this process, `local_collection` answers None and the caller uses
pymilvus.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence


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

    Lite 3.x keeps a partition key as `DEFAULT_NUM_PARTITIONS` bucket partitions ``_pk_<h>``, a row
    going to the bucket of md5(str(key value)) modulo their number
    (`Collection._insert_with_partition_key`), but unlike a Milvus server it does not route a
    search filtered on the key to that bucket: each sub-search walks every bucket's segments.
    Named here, the walk covers the subject's bucket only. The rule is Lite's (pinned in
    pyproject.toml); anything unexpected (another key, no such bucket) answers None.
    """
    key = getattr(collection, "_partition_key_field", None)
    buckets = getattr(collection, "_num_partition_buckets", None)
    if key != "subject_id" or not isinstance(buckets, int) or buckets < 1:
        return None
    from milvus_lite.constants import PARTITION_KEY_BUCKET_PREFIX

    h = int(hashlib.md5(str(subject_id).encode()).hexdigest(), 16) % buckets  # noqa: S324 - Lite's rule
    name = f"{PARTITION_KEY_BUCKET_PREFIX}{h}"
    return [name] if collection.has_partition(name) else None


def search(
    collection,
    data: Sequence,
    *,
    field: str,
    metric: str,
    limit: int,
    expr: str,
    output_fields: Sequence[str],
    partitions: Sequence[str] | None = None,
) -> list[list[dict]]:
    """One multi-query search of one vector field, as the gRPC Search handler runs it.

    Hits are ``{"id", "distance", "entity"}`` dicts with Milvus's distance convention (the
    handler sends them as they are), so `rows.to_hit` reads them like pymilvus hits.
    """
    return collection.search(
        query_vectors=list(data),
        top_k=limit,
        metric_type=metric,
        partition_names=list(partitions) if partitions else None,
        expr=expr,
        output_fields=list(output_fields),
        anns_field=field,
    )
