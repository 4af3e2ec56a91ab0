"""Evidence recall: embeddings, the Milvus evidence index, hybrid search, agentic recall and the router.

Settings are read by `runtime.py` and the database by `indexing.py` / `bulk.py`; the other modules
take plain values, so the evaluation harness can reuse them without Django.
"""
