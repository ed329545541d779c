"""The keyword side: the BM25 copy in memory, its build, counts, sidecar and text rules."""
