"""The vector side: the vector copy, chunk windows, the embedder and query vectors."""
