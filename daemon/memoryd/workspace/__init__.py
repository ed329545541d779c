"""Workspaces on disk: the registry, the file layout, transcripts, watching and appending."""
