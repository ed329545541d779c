"""What the secret scan (memoryd/secrets.py) costs per KB, against an append of the same text.

    python bench/secret_scan.py [--kb 1,16] [--rounds 200]

Texts: prose with no hint of a secret (LoCoMo-like notes), notes full of hints (paths,
URLs, "key"/"token" words, hashes) but no secret, and notes with a secret every few lines.
The baseline, measured in the same run: ``Appender.append`` of the same text to a daily
file on this disk (a write and an fsync, the scan included), so the table says what share
of an append the scan is. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import tempfile
import time
from pathlib import Path

from memoryd.files.append import Appender
from memoryd.secrets import redact

PROSE = (
    "- Caroline went to the LGBTQ support group on 7 May 2023 and felt inspired by the "
    "stories she heard there.\n"
)
HINTS = (
    "- the deploy key for project_alpha is in the vault; see docs/runbooks/deploy-2024.md and "
    "https://ci.example.com/job/4411, commit 3f786850e387550fdab836ed7e6dc881de23001b\n"
)
SECRETS = (
    "- the staging token is ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0 (rotate monthly)\n"
    "- db: postgres://admin:hunter2verysecret@db.example.com/prod\n"
    "- the wifi password is Tr0ub4dor&3 now\n" + PROSE * 3
)


def text_of(unit: str, kb: int) -> str:
    return (unit * (kb * 1024 // len(unit) + 1))[: kb * 1024]


def per_kb_us(fn: object, text: str, rounds: int) -> float:
    call = fn  # type: ignore[assignment]
    start = time.perf_counter()
    for _ in range(rounds):
        call(text)  # type: ignore[operator]
    return (time.perf_counter() - start) / rounds / (len(text) / 1024) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", default="1,16")
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    redact(SECRETS)  # loads the rule set (once per process) outside the timing
    root = Path(tempfile.mkdtemp(prefix="md-secrets-"))
    appender = Appender()
    day = dt.date(2024, 5, 1)

    def append(text: str) -> None:
        appender.append(root, text, day)
        (root / "memory" / "2024-05-01.md").unlink()

    print(f"load: {os.getloadavg()[0]:.2f}")
    print(f"{'text':<10} {'KB':>4} {'scan us/KB':>11} {'append us/KB':>13} {'scan/append':>12}")
    try:
        for kb in (int(k) for k in args.kb.split(",")):
            for name, unit in (("prose", PROSE), ("hints", HINTS), ("secrets", SECRETS)):
                text = text_of(unit, kb)
                scan = per_kb_us(redact, text, args.rounds)
                base = per_kb_us(append, text, max(20, args.rounds // 10))
                print(f"{name:<10} {kb:>4} {scan:>11.1f} {base:>13.1f} {scan / base:>12.3f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
