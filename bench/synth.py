"""A deterministic synthetic workspace of about N chunks, for the speed benchmarks.

    python bench/synth.py OUT_DIR --chunks 10000 [--seed 1] [--verify]

Writes ``MEMORY.md`` (curated sections: people, projects, preferences) and daily logs
``memory/YYYY-MM-DD.md`` (``## topic`` sections of bullet lines such as
``- 14:05 Alice Moreau: ... on 2021-03-04 ...``). Words are the bundled WordPiece
tokenizer's whole-word vocabulary, which is close to frequency order, so its first few
thousand entries drawn Zipf-like read like (meaningless) English and stem like English.
The same (chunks, seed) always gives byte-identical files.

The size is calibrated so that indexing with the default 400/80-token chunking gives
about N chunks (``--verify`` indexes keyword-only into a temp index and prints the real
count). Importable: ``make_workspace(path, chunks, seed) -> Path``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import re
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from functools import cache
from pathlib import Path

VOCAB_SIZE = 4000
ZIPF_S = 1.07
WORDS_PER_LINE = (6, 26)  # uniform range: ~16 on average
# Calibrated (see --verify): lines of ~16 words per 400-token chunk with 80-token overlap.
LINES_PER_CHUNK = 11.0
LINES_PER_SECTION = (4, 14)
MEMORY_SHARE = 0.02  # of the lines, in MEMORY.md
MAX_DAYS = 3000
FIRST_DAY = date(2016, 1, 4)

FIRST_NAMES = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Uma",
    "Victor",
    "Wendy",
    "Xavier",
    "Yara",
    "Zoltan",
    "Caroline",
    "Melanie",
]
LAST_NAMES = [
    "Moreau",
    "Tanaka",
    "Okafor",
    "Lindqvist",
    "Novak",
    "Haddad",
    "Silva",
    "Kowalski",
    "Nguyen",
    "Fischer",
    "Rossi",
    "Petrov",
    "Garcia",
    "Ibrahim",
]
TOPICS = [
    "Standup",
    "Planning",
    "Design review",
    "Incident",
    "Travel",
    "Reading notes",
    "Customer call",
    "Retro",
    "Ideas",
    "Errands",
    "Health",
    "Family",
    "Deploy",
    "Research",
    "Budget",
    "Hiring",
    "Weekend",
    "Learning",
    "Meeting notes",
    "Follow-ups",
]
MEMORY_SECTIONS = ["People", "Projects", "Preferences", "Decisions", "Places", "Open questions"]


@cache
def vocabulary() -> tuple[str, ...]:
    """The first VOCAB_SIZE lower-case whole words of the bundled tokenizer, by token id."""
    from memoryd.embeddings.tokenizer import TOKENIZER_FILE

    vocab: dict[str, int] = json.loads(TOKENIZER_FILE.read_text())["model"]["vocab"]
    words = sorted((w for w in vocab if re.fullmatch(r"[a-z]{3,12}", w)), key=vocab.__getitem__)
    return tuple(words[:VOCAB_SIZE])


class _Writer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary()
        weights = [1.0 / (r**ZIPF_S) for r in range(1, len(self.words) + 1)]
        self.cum = list(itertools.accumulate(weights))
        self.names = [f"{f} {ln}" for f in FIRST_NAMES for ln in LAST_NAMES]

    def draw(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=k)

    def sentence(self, day: date) -> str:
        rng = self.rng
        words = self.draw(rng.randint(*WORDS_PER_LINE))
        if rng.random() < 0.3:  # a name somewhere in the line
            words.insert(rng.randrange(len(words) + 1), rng.choice(self.names))
        if rng.random() < 0.15:  # a date, near the day or an absolute one
            when = day + timedelta(days=rng.randint(-400, 120))
            words.insert(rng.randrange(len(words) + 1), f"on {when.isoformat()}")
        if rng.random() < 0.05:
            words.append(f"#tag{rng.randrange(40)}")
        return " ".join(words)

    def bullet(self, day: date) -> str:
        rng = self.rng
        who = rng.choice(self.names).split()[0]
        return f"- {rng.randint(7, 22):02d}:{rng.randint(0, 59):02d} {who}: {self.sentence(day)}."

    def sections(self, day: date, lines: int, titles: list[str]) -> list[str]:
        out: list[str] = []
        while lines > 0:
            n = min(lines, self.rng.randint(*LINES_PER_SECTION))
            title = self.rng.choice(titles)
            out += [f"## {title}", ""] + [self.bullet(day) for _ in range(n)] + [""]
            lines -= n
        return out


def plan(chunks: int) -> tuple[int, int]:
    """(daily files, lines in them) for about ``chunks`` chunks."""
    total = max(1, round(chunks * LINES_PER_CHUNK))
    days = max(1, min(MAX_DAYS, total // 80))
    return days, total


def make_workspace(path: Path | str, chunks: int, seed: int = 1) -> Path:
    """Write the workspace at ``path`` (an existing one is replaced); return its path."""
    root = Path(path)
    if root.exists():
        shutil.rmtree(root)
    (root / "memory").mkdir(parents=True)
    w = _Writer(seed)
    days, total = plan(chunks)
    mem_lines = max(3, round(total * MEMORY_SHARE))
    daily_lines = max(days, total - mem_lines)
    memory = ["# MEMORY", "", "Long-term notes, curated.", ""]
    memory += w.sections(FIRST_DAY, mem_lines, MEMORY_SECTIONS)
    (root / "MEMORY.md").write_text("\n".join(memory))
    base, extra = divmod(daily_lines, days)
    for i in range(days):
        day = FIRST_DAY + timedelta(days=i)
        n = base + (1 if i < extra else 0)
        text = [f"# {day.isoformat()}", "", *w.sections(day, n, TOPICS)]
        (root / "memory" / f"{day.isoformat()}.md").write_text("\n".join(text))
    return root


# The shared benchmark folder beside the checkout (or beside the folder of worktrees).
LOCOMO_DIR = next(
    (
        p / "shared" / "bench" / "locomo-dev"
        for p in Path(__file__).resolve().parents[1:]
        if (p / "shared" / "bench" / "locomo-dev").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev",
)
LOCOMO_CHUNKS = 416  # chunks of the five locomo-dev workspaces together (400/80 chunking)


def make_locomo_workspace(path: Path | str, chunks: int, source: Path = LOCOMO_DIR) -> Path:
    """A workspace of about ``chunks`` chunks made of copies of the LoCoMo dev daily logs
    (read from ``../shared`` at run time, never stored here), each copy on other dates.
    Real conversation text: a speaker's name on every line, so an OR query of a question
    matches nearly every chunk, unlike the synthetic vocabulary's third."""
    root = Path(path)
    if root.exists():
        shutil.rmtree(root)
    (root / "memory").mkdir(parents=True)
    logs = sorted(source.glob("*/memory/*.md"))
    if not logs:
        raise SystemExit(f"no LoCoMo daily logs under {source} (see ../shared/bench/README.md)")
    copies = max(1, round(chunks / LOCOMO_CHUNKS))
    day = FIRST_DAY
    for _ in range(copies):
        for log in logs:
            (root / "memory" / f"{day.isoformat()}.md").write_bytes(log.read_bytes())
            day += timedelta(days=1)
    (root / "MEMORY.md").write_text("# MEMORY\n\nConversations between friends, copied.\n")
    return root


def conv_questions(conv: str, n: int, source: Path = LOCOMO_DIR) -> list[str]:
    """The first ``n`` distinct questions of one LoCoMo dev conversation (conv-26 has 150)."""
    out: list[str] = []
    with (source / "qrels.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            if row["conv"] == conv and row["question"] not in out:
                out.append(row["question"])
    return out[:n]


def locomo_queries(n: int = 50, source: Path = LOCOMO_DIR) -> list[str]:
    """The first ``n`` distinct questions of the LoCoMo dev qrels."""
    out: list[str] = []
    with (source / "qrels.jsonl").open() as f:
        for line in f:
            q = json.loads(line)["question"]
            if q not in out:
                out.append(q)
            if len(out) == n:
                break
    return out


def make_queries(n: int = 50, seed: int = 7, ranks: tuple[int, int] = (30, 1500)) -> list[str]:
    """``n`` distinct agent-style queries over the synthetic vocabulary: 2-5 words drawn
    log-uniformly from the frequency ``ranks`` (30-1500: common words, the OR-query matches
    about a third of all chunks, as LoCoMo-style questions naming a speaker do), a third
    with a person's name, some with an everyday question word."""
    rng = random.Random(seed)
    words = vocabulary()
    names = [f"{f} {ln}" for f in FIRST_NAMES for ln in LAST_NAMES]
    out: list[str] = []
    while len(out) < n:
        k = rng.randint(2, 5)
        terms = list(
            dict.fromkeys(
                words[int(math.exp(rng.uniform(math.log(ranks[0]), math.log(ranks[1]))))]
                for _ in range(k)
            )
        )
        if rng.random() < 0.33:
            terms.insert(0, rng.choice(names))
        if rng.random() < 0.3:
            terms.insert(0, rng.choice(["what did", "when did", "why", "who said"]))
        q = " ".join(terms)
        if q not in out:
            out.append(q)
    return out


def count_chunks(root: Path) -> tuple[int, int, float]:
    """Index ``root`` keyword-only into a temp index: (files, chunks, seconds)."""
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.runtime.config import config_from_mapping

    cfg = config_from_mapping({"embedding": {"provider": "none"}}, {})
    with tempfile.TemporaryDirectory(prefix="memoryd-synth-") as tmp:
        ix = WorkspaceIndex(root, Path(tmp) / "ix.sqlite", cfg, None, "bench")
        ix.open()
        started = time.perf_counter()
        ix.sync()
        took = time.perf_counter() - started
        st = ix.status()
        ix.close()
    return int(st["files"]), int(st["chunks"]), took


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("out", type=Path)
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--verify", action="store_true", help="index keyword-only and print the real chunk count"
    )
    args = ap.parse_args()
    from memoryd.runtime.logs import configure_logging

    configure_logging("warning", json=True)
    started = time.perf_counter()
    root = make_workspace(args.out, args.chunks, args.seed)
    files = sum(1 for _ in root.rglob("*.md"))
    size = sum(p.stat().st_size for p in root.rglob("*.md"))
    print(
        f"wrote {root}: {files} files, {size / 1e6:.1f} MB in "
        f"{time.perf_counter() - started:.1f}s (target {args.chunks} chunks)",
        file=sys.stderr,
    )
    if args.verify:
        nfiles, nchunks, took = count_chunks(root)
        print(
            f"indexed: {nfiles} files, {nchunks} chunks ({nchunks / args.chunks:.2f}x target) "
            f"in {took:.1f}s"
        )


if __name__ == "__main__":
    main()
