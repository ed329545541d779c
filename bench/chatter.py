"""A deterministic workspace of chat-like daily logs over a small vocabulary.

    python bench/chatter.py OUT_DIR --chunks 100000 [--seed 1]

Every line reads like ``- Alice: I reviewed the budget with Bob, then we talked about hiking
and chess for a while.``: ~20 names, ~35 topics and ~11 verbs, so every word of a question
such as ``when did Alice talk about budget and hiking`` is in thousands of chunks and its
posting list is long. This is the hard case for keyword growth (bench/synth.py's Zipf
vocabulary has a long tail of rare words that keeps most posting lists short).

Daily files ``memory/YYYY-MM-DD.md`` of 10-90 lines, ~3.8 chunks each with the default
400/80-token chunking (``make_chatter_workspace`` picks the number of files from the chunks
asked for: 104k chunks are ~27,700 files). The same (chunks, seed) always gives
byte-identical files.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from datetime import date, timedelta
from pathlib import Path

NAMES = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy",
    "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor", "Walter",
    "Yvonne",
]  # fmt: skip
TOPICS = [
    "budget", "hiking", "chess", "cooking", "the garden", "taxes", "the roadmap", "hiring",
    "vacation", "the car", "music", "painting", "running", "the kids", "school", "the move",
    "insurance", "the wedding", "photography", "football", "the launch", "the offsite",
    "groceries", "the dentist", "yoga", "podcasts", "the novel", "climbing", "the renovation",
    "investments", "the conference", "baking", "cycling", "the interview", "gardening tools",
]  # fmt: skip
VERBS = [
    "reviewed", "discussed", "planned", "argued about", "looked into", "sorted out",
    "talked through", "finished", "started", "postponed", "checked",
]  # fmt: skip
QUESTION_FORMS = [
    "when did {a} talk about {t} and {u}",
    "what did {a} say about {t}",
    "who {v} {t} with {a}",
    "did {a} and {b} discuss {t}",
    "{a} {t} {u}",
    "when did {a} and {b} talk about {t}",
]
LINES_PER_FILE = (10, 90)
FIRST_DAY = date(1960, 1, 1)
CHUNKS_PER_FILE = 3.76  # measured with the default chunking (869 chunks in 231 files)


def _line(rng: random.Random) -> str:
    a, b = rng.sample(NAMES, 2)
    t, u, w = rng.sample(TOPICS, 3)
    v = rng.choice(VERBS)
    form = rng.randrange(4)
    if form == 0:
        return f"- {a}: I {v} {t} with {b}, then we talked about {u} and {w} for a while."
    if form == 1:
        return f"- {a}: {b} and I {v} {t} this morning; we agreed {u} and {w} can wait a week."
    if form == 2:
        return f"- {a}: Told {b} that I {v} {t} and {u} yesterday, and {w} is still on the list."
    return f"- {a}: We {v} {t} again over lunch, {b} thinks {u} matters more than {w} now."


def files_for(chunks: int) -> int:
    return max(1, round(chunks / CHUNKS_PER_FILE))


def make_chatter_workspace(path: Path | str, chunks: int, seed: int = 1) -> Path:
    """Write the workspace at ``path`` (an existing one is replaced); return its path."""
    root = Path(path)
    if root.exists():
        shutil.rmtree(root)
    (root / "memory").mkdir(parents=True)
    rng = random.Random(seed)
    for i in range(files_for(chunks)):
        day = FIRST_DAY + timedelta(days=i)
        lines = [f"# {day.isoformat()}", ""]
        lines += [_line(rng) for _ in range(rng.randint(*LINES_PER_FILE))]
        (root / "memory" / f"{day.isoformat()}.md").write_text("\n".join(lines) + "\n")
    (root / "MEMORY.md").write_text("# MEMORY\n\nWho talked about what, day by day.\n")
    return root


def chatter_queries(n: int = 50, seed: int = 7) -> list[str]:
    """``n`` distinct questions over the same vocabulary (every word in many chunks)."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        a, b = rng.sample(NAMES, 2)
        t, u = rng.sample(TOPICS, 2)
        q = rng.choice(QUESTION_FORMS).format(a=a, b=b, t=t, u=u, v=rng.choice(VERBS))
        if q not in out:
            out.append(q)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", type=Path)
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    root = make_chatter_workspace(args.out, args.chunks, args.seed)
    files = sum(1 for _ in root.rglob("*.md"))
    print(f"wrote {root}: {files} files (target {args.chunks} chunks)", file=sys.stderr)


if __name__ == "__main__":
    main()
