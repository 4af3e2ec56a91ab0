"""Where evidence rows live: the subject is the partition key, every filtered field has an INVERTED
index. A Milvus server holds one collection, `<base>_v2`; Milvus Lite (which walks every row of a
collection before any filter) `LITE_SHARDS` collections `<base>_v2_<k>of<n>` (shard ``subject_id % n``).
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

LAYOUT = 2
LITE_SHARDS = 32
NUM_PARTITIONS = 64
TEXT_MAX_BYTES = 16000
SESSION_MAX = 128
SCALAR_INDEXED = ("tenant_id", "subject_id", "end_seq", "ts_ms")


class IndexUnavailable(RuntimeError):
    """Milvus cannot be reached or refused the operation."""


def is_lite(client) -> bool:
    """True when the client talks to Milvus Lite (embedded or `milvus-lite server`)."""
    return str(client.get_server_version()).lower().startswith("milvus_lite")


def collection_of(base: str, shards: int, subject_id: int) -> str:
    return f"{base}_v{LAYOUT}" + (f"_{subject_id % shards}of{shards}" if shards > 1 else "")


def schema(client, dim: int):
    """The evidence schema."""
    from pymilvus import DataType, Function, FunctionType

    s = client.create_schema(auto_id=False, enable_dynamic_field=False)
    s.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=64)
    for name in ("tenant_id", "subject_id", "start_seq", "end_seq", "ts_ms"):
        s.add_field(name, DataType.INT64, is_partition_key=name == "subject_id")
    s.add_field("session", DataType.VARCHAR, max_length=SESSION_MAX * 4)
    s.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_BYTES, enable_analyzer=True)
    s.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
    s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    s.add_function(
        Function(
            name="text_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["text"],
            output_field_names=["sparse"],
        )
    )
    return s


def create(client, name: str, dim: int) -> None:
    """Create one layout-2 collection (loaded) with its dense (AUTOINDEX, cosine) and BM25 indexes,
    INVERTED on every filtered field."""
    client.create_collection(name, schema=schema(client, dim), num_partitions=NUM_PARTITIONS)
    ip = client.prepare_index_params()
    ip.add_index("dense", index_type="AUTOINDEX", metric_type="COSINE")
    ip.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    for field in SCALAR_INDEXED:
        ip.add_index(field, index_type="INVERTED")
    # The collection is empty, so nothing waits on a build: sync=False skips pymilvus's 0.5 s poll
    # per index.
    client.create_index(name, ip, sync=False)
    client.load_collection(name)
    logger.info("created evidence collection %s (layout %d, dim %d)", name, LAYOUT, dim)


def open_existing(client, name: str, dim: int) -> None:
    """Check an existing collection's vector size and load it (a no-op when loaded)."""
    fields = {f["name"]: f for f in client.describe_collection(name)["fields"]}
    have = int(fields["dense"]["params"]["dim"])
    if have != dim:
        raise IndexUnavailable(
            f"collection {name!r} has dim {have}, embedder has {dim}: "
            "use another PERSONATREE_MILVUS_COLLECTION or re-index"
        )
    # A collection reopened from disk (or released by another client) is not searchable
    # until loaded; loading an already loaded collection is a no-op.
    client.load_collection(name)
