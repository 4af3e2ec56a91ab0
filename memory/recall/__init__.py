"""Evidence recall: embeddings, the Milvus evidence index, hybrid search, agentic recall and the router.

Nothing here imports Django at module import time except where settings are read
through `memory.recall.config`; the pure parts (router, metrics, fusion) take
plain values so the evaluation harness can reuse them.
"""
