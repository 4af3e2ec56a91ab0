"""Evidence recall: the Milvus evidence index, hybrid search, agentic recall and the router. Only
`runtime.py` reads settings and `indexing.py` / `bulk.py` the database; the rest take plain values.
"""
