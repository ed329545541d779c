"""The workspace's files as files: layout, reading, transcripts, safe writes and appends; what
a memory line says about itself and where it came from."""
