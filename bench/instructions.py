"""The daemon's instructions per request, counted by callgrind: a CPU figure the load leaves alone.

    python bench/instructions.py [--baseline REV ...] [--n 300] [--methods search,hello]
                                 [--workspace DIR] [--json]

On a shared 2-core machine a search's wall clock and even its CPU seconds move with the
load; the number of instructions the daemon executes for it does not. For each code (each
``--baseline REV`` in a detached worktree, bench/scale.py's, then this tree):

1. a keyword daemon (provider none) indexes WORKSPACE (default LoCoMo dev's conv-26) and
   stops, all outside valgrind;
2. the daemon starts again on that index under ``valgrind --tool=callgrind``; one client
   connection asks conv-26's 150 questions once (warm-up: the copies, caches, hit counting's
   memo), then, per method: ``callgrind_control --dump`` (counters reset), ``--n`` requests
   back to back on that connection (searches: 10 hits, min score 0, the questions in turn;
   then the time hit counting's batch gathers), a dump, as long again with nothing asked, a
   dump. Instructions per request = (busy dump - idle dump) / n: the idle dump takes away
   what the daemon does by itself meanwhile (its timers, the idle reaper).

Every thread of the daemon is counted (callgrind sums them): the event loop's, the reader
threads', hit counting's. The client runs outside valgrind, unless ``--client``: then the
requests are asked by a client process under callgrind too (bench/_client_requests.py, the
same rev's client), dumped on either side of each batch, and its instructions per request
are reported beside the daemon's (the columns ``client ...``). A daemon under callgrind runs
~50x slower, so a code takes a few minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from latency import MEMORYD, Daemon
from scale import code_at
from synth import LOCOMO_DIR, conv_questions

# hit counting gathers a batch for a second, then waits for a lull (0.2 s without a
# search, at most 4 s more: lifecycle/hits.py); slower here: the batch is in the count
HIT_BATCH_S = 8.0
STARTUP_S = 600.0  # a daemon under callgrind starts in tens of seconds on a loaded machine


def build_index(home: Path, source: Path, env: dict[str, str]) -> str:
    """Index ``source`` in ``home`` with a plain (keyword) daemon; the workspace's name."""
    d = Daemon(home, "none")
    d.env.update(env)
    d.start()
    try:
        with d.client() as c:
            name = c.workspace_add(source).name
            c.reindex(workspace=name, wait=True)
    finally:
        d.stop()
    return name


@contextlib.contextmanager
def under_callgrind(home: Path, env: dict[str, str], out: Path) -> Iterator[Daemon]:
    d = Daemon(home, "none")
    d.env.update(env)
    with open(d.log, "ab") as log:
        d.proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", MEMORYD, "run"],
            env=d.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            with contextlib.suppress(Exception), d.client(timeout=STARTUP_S) as c:
                c.hello()
                break
            if d.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"memoryd under callgrind did not start:\n{d.log.read_text()}")
            time.sleep(0.2)
        yield d
    finally:
        d.stop()


def dump(pid: int, out: Path) -> int:
    """Dump the counters (they restart at zero) and return what the dump holds."""
    before = set(out.parent.glob(out.name + ".*"))
    subprocess.run(["callgrind_control", "--dump", str(pid)], capture_output=True, check=True)
    deadline = time.monotonic() + 60
    while True:
        new = set(out.parent.glob(out.name + ".*")) - before
        for f in new:
            m = re.search(r"^(?:totals|summary): (\d+)", f.read_text(), re.M)
            if m:
                return int(m.group(1))
        if time.monotonic() > deadline:
            raise SystemExit("callgrind wrote no dump")
        time.sleep(0.1)


@contextlib.contextmanager
def client_under_callgrind(
    d: Daemon, env: dict[str, str], out: Path, name: str, queries: list[str]
) -> Iterator[tuple[int, Callable[[str, int], None]]]:
    """A client process under callgrind (bench/_client_requests.py): its pid, and a call
    that has it ask n requests of a method and waits for them."""
    probe = Path(__file__).with_name("_client_requests.py")
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    proc = subprocess.Popen(
        [*command, str(probe), str(d.socket), name, *queries],
        env={**d.env, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def ask(method: str, n: int) -> None:
        stdin.write(f"{method} {n}\n")
        stdin.flush()
        if stdout.readline().strip() != "done":
            raise SystemExit(f"the client under callgrind ended (exit {proc.wait()})")

    try:
        yield proc.pid, ask
    finally:
        with contextlib.suppress(OSError):
            stdin.write("quit\n")
            stdin.close()
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def count(
    rev: str | None, tmp: Path, source: Path, n: int, methods: list[str], client: bool = False
) -> dict[str, int]:
    """Instructions per request of each method for the code of ``rev`` (None: this tree);
    with ``client``, the client's too (keys ``client <method>``)."""
    queries = conv_questions(source.name, 150) if source.parent == LOCOMO_DIR else []
    if not queries:
        queries = [p.stem.replace("-", " ") for p in sorted(source.rglob("*.md"))][:150]
    tag = rev or "this"
    home = tmp / f"home-{tag.replace('/', '_')}"
    out = tmp / f"cg-{tag.replace('/', '_')}.out"
    with code_at(rev, tmp, compiled=True) as env:
        name = build_index(home, source, env)
        with contextlib.ExitStack() as stack:
            d = stack.enter_context(under_callgrind(home, env, out))
            if client:
                cout = tmp / f"cgc-{tag.replace('/', '_')}.out"
                cpid, ask = stack.enter_context(client_under_callgrind(d, env, cout, name, queries))
            else:
                ask = asker(stack.enter_context(d.client(timeout=STARTUP_S)), name, queries)
            ask("search", len(queries))
            time.sleep(HIT_BATCH_S)
            per: dict[str, int] = {}
            for method in methods:
                dump(d.pid, out)
                if client:
                    dump(cpid, cout)
                started = time.monotonic()
                ask(method, n)
                if client:
                    per[f"client {method}"] = dump(cpid, cout) // n
                    log(f"{tag} client {method}: {per[f'client {method}']:,} each")
                if method == "search":
                    time.sleep(HIT_BATCH_S)
                busy = dump(d.pid, out)
                time.sleep(time.monotonic() - started)
                idle = dump(d.pid, out)
                per[method] = (busy - idle) // n
                log(f"{tag} {method}: {per[method]:,} each (busy {busy:,}, idle {idle:,})")
            return per


def asker(c: Any, name: str, queries: list[str]) -> Callable[[str, int], None]:
    """The driver's own client asking n requests of a method (outside valgrind)."""

    def ask(method: str, n: int) -> None:
        for i in range(n):
            if method == "hello":
                c.hello()
            else:
                c.search(queries[i % len(queries)], workspace=name, max_results=10, min_score=0)

    return ask


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", action="append", default=[], help="a git rev (repeatable)")
    ap.add_argument("--n", type=int, default=300, help="requests per method")
    ap.add_argument("--methods", default="search,hello")
    ap.add_argument("--workspace", type=Path, default=LOCOMO_DIR / "conv-26")
    ap.add_argument("--client", action="store_true", help="count the client's too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind (with callgrind_control) is needed")
    methods = args.methods.split(",")
    rows: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="mdi-", dir="/tmp") as t:
        tmp = Path(t)
        for rev in [*args.baseline, None]:
            source = args.workspace.resolve()
            rows[rev or "this"] = count(rev, tmp, source, args.n, methods, args.client)
    if args.client:
        methods = [*methods, *(f"client {m}" for m in methods)]
    report(rows, methods, args)


def report(rows: dict[str, dict[str, int]], methods: list[str], args: Any) -> None:
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    first = next(iter(rows.values()))
    ratio = "search" in methods and "hello" in methods
    head = [*(f"per {m}" for m in methods), *(["search ÷ hello"] if ratio else [])]
    print(f"| code | {' | '.join(head)} |")
    print("|---|" + "---:|" * len(head))
    for code, per in rows.items():
        cells = []
        for m in methods:
            rel = f" ({per[m] / first[m]:.2f}x)" if per is not first and first[m] else ""
            amount = f"{per[m] / 1e6:.3f} M" if per[m] >= 1e6 else f"{per[m] / 1e3:.0f} k"
            cells.append(amount + rel)
        if ratio:
            search, hello = per["search"], per["hello"]
            if "client search" in per:  # both sides of the socket
                search, hello = search + per["client search"], hello + per["client hello"]
            cells.append(f"{search / max(hello, 1):.1f}x")
        print(f"| {code} | {' | '.join(cells)} |")
    print(
        f"\ninstructions of every daemon thread per request (callgrind), {args.n} requests "
        f"on one connection, an idle stretch as long subtracted; {args.workspace.name}, "
        f"keyword, 10 hits, min score 0; python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    os.environ.pop("PYTHONPATH", None)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    main()
