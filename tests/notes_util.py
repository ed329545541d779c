"""A workspace of many small notes: a first index long enough to ask the daemon things
while it runs (tests/daemon, bench/scan_answers.py). Standard library only."""

from __future__ import annotations

from pathlib import Path


def big_workspace(root: Path, files: int) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nlong term facts\n")
    for i in range(files):
        (root / "memory" / f"note-{i:05d}.md").write_text(
            f"# Note {i}\n\n"
            + "".join(f"line {j} of note {i} about subject{j % 13}\n" for j in range(30))
        )
    return root
