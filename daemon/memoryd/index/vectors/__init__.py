"""The vector side of the store: the vector copy, its chunk windows and their similarities
to a query (the embedder and the query vectors, which use the store, are index/embedder.py
and index/query_vectors.py)."""
