"""Workspaces served: the registry, search across them, and watching their files."""
