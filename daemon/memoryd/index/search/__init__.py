"""A search: query parsing, validation, fusion, snippets, notices and recall."""
