"""Start → first answer, per embedding provider: does a search wait for the model?

    python bench/startup.py [WORKSPACE] [--baseline REV] [--restarts 5] [--json]

WORKSPACE (default ../shared/bench/locomo-dev/conv-26) is copied into a fresh
MEMORYD_HOME per provider (none, local = the bundled ONNX model, openai = tests/fakes'
fake endpoint in its own process) and indexed once with every vector embedded. Then the
daemon is restarted ``--restarts`` times on that complete index, and each time a client
measures from the spawn:

- → hello answered (the socket accepts),
- → first keyword search answered,
- → first hybrid search answered (whatever it says), and whether it said why it had no
  vectors (``degraded``),
- → first hybrid search answered with vectors (``mode_used`` hybrid, not degraded).

``--baseline REV`` runs the same with the code of git revision REV first (bench/scale.py's
detached worktree), both on the same index copies; medians and ratios are printed with the
load average. Timings include the client's own connect and Python start of the daemon; both
codes run from bytecode written before (bench/scale.py's compile_code), as an install does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from latency import MEMORYD, Daemon, log
from memoryd_client import MemoryClient
from scale import code_at, daemon, fake_openai

PROVIDERS = ("none", "local", "openai")
QUERY = "What did Caroline research about adoption agencies?"


def first_answers(d: Daemon, ws: str, provider: str, timeout: float = 60) -> dict[str, Any]:
    t0 = time.perf_counter()
    out: dict[str, Any] = {"hello_s": d.start()}
    with d.client() as c:
        c.search(QUERY, workspace=ws, mode="keyword")
        out["keyword_s"] = time.perf_counter() - t0
        r = c.search(QUERY, workspace=ws, mode="hybrid")
        out["hybrid_s"] = time.perf_counter() - t0
        out["hybrid_degraded"] = "; ".join(r.degraded)
        deadline = time.monotonic() + (timeout if provider != "none" else 0)
        while (r.degraded or r.mode_used != "hybrid") and time.monotonic() < deadline:
            time.sleep(0.01)
            r = c.search(QUERY, workspace=ws, mode="hybrid")
        out["vectors_s"] = time.perf_counter() - t0 if not r.degraded else float("nan")
        out["vectors_mode"] = r.mode_used
    d.stop()
    return out


def activated_answer(d: Daemon, ws: str, query: str) -> float:
    """Socket activation as systemd does it (memoryd.socket): the socket is bound and
    listening before the daemon exists; a question's connection waits in its backlog while
    the manager spawns ``memoryd run`` with the socket as fd 3 (LISTEN_PID, LISTEN_FDS).
    Seconds from the spawn (the question already asked) to its answer."""
    d.socket.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    d.socket.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(d.socket))
    os.chmod(d.socket, 0o600)
    listener.listen(16)
    fd = listener.fileno()

    def as_systemd() -> None:  # in the child, between fork and exec
        os.environ.clear()
        os.environ.update(d.env, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
        os.dup2(fd, 3)
        os.set_inheritable(3, True)  # dup2 onto itself (the listener was fd 3) keeps CLOEXEC

    with open(d.log, "ab") as out:
        t = time.perf_counter()
        # close_fds=False: fd 3, made by dup2 in the child, is inheritable and must survive
        # (Python's own descriptors are close-on-exec whatever this says).
        proc = subprocess.Popen(
            [MEMORYD, "run"], close_fds=False, preexec_fn=as_systemd, stdout=out, stderr=out
        )
    try:
        with MemoryClient(d.socket, timeout=60) as c:
            c.search(query, workspace=ws, mode="keyword", max_results=10, min_score=0)
        return time.perf_counter() - t
    except Exception as exc:
        raise SystemExit(f"socket-activated daemon: {exc}\n{d.log.read_text()[-3000:]}") from exc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        listener.close()
        d.socket.unlink(missing_ok=True)  # the manager's file: the daemon leaves it


def prepare(home: Path, src: Path, provider: str, env: dict[str, str], url: str) -> str:
    """A home with ``src`` registered and fully indexed (vectors too); returns its name."""
    d = daemon(home, provider, env, url)
    d.start()
    with d.client() as c:
        name = c.workspace_add(home.parent / f"{home.name}-ws", None).name
        c.reindex(workspace=name, wait=True)
    d.stop()
    return str(name)


def run(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    codes = ([(args.baseline, args.baseline)] if args.baseline else []) + [("this", None)]
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(fake_openai())
        envs = {
            label: stack.enter_context(code_at(rev, tmp, compiled=True)) for label, rev in codes
        }
        for provider in PROVIDERS:
            home = tmp / f"h-{provider}"
            shutil.copytree(args.workspace, tmp / f"h-{provider}-ws")
            # Built once (by the first code), restarted by each: the same index rows.
            first_env = envs[codes[0][0]]
            log(f"indexing for {provider}")
            ws = prepare(home, args.workspace, provider, first_env, url)
            for i in range(args.restarts):
                for label, _ in codes:  # interleaved: load drifts alike for both
                    r = first_answers(daemon(home, provider, envs[label], url), ws, provider)
                    r.update(provider=provider, code=label, round=i, load=os.getloadavg()[0])
                    rows.append(r)
                    log(f"{provider} {label}: {r}")
    return rows


def median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def report(rows: list[dict[str, Any]], baseline: str | None) -> None:
    print(
        "| provider | code | → hello ms | → first keyword ms | → first hybrid ms "
        "| hybrid degraded at first | → hybrid with vectors ms |"
    )
    print("|---|---|---:|---:|---:|---|---:|")
    for provider in PROVIDERS:
        base = [r for r in rows if r["provider"] == provider and r["code"] == baseline]
        for code in dict.fromkeys(r["code"] for r in rows):
            mine = [r for r in rows if r["provider"] == provider and r["code"] == code]
            cells = []
            for key in ("hello_s", "keyword_s", "hybrid_s"):
                v = median(mine, key) * 1000
                ratio = (
                    f" ({v / (median(base, key) * 1000):.2f}x)" if base and code != baseline else ""
                )
                cells.append(f"{v:.0f}{ratio}")
            why = {r["hybrid_degraded"][:60] for r in mine} - {""}
            vec = median(mine, "vectors_s") * 1000
            print(
                f"| {provider} | {code} | {' | '.join(cells)} | {'; '.join(sorted(why)) or '-'} "
                f"| {vec:.0f} |"
            )
    loads = [r["load"] for r in rows]
    print(
        f"\nmedians of {len(rows) // max(1, len({(r['provider'], r['code']) for r in rows}))} "
        f"restarts each, interleaved; load average (1 min) {min(loads):.1f}-{max(loads):.1f} "
        f"on {os.cpu_count()} cores"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    here = Path(__file__).resolve().parent
    ap.add_argument(
        "workspace",
        type=Path,
        nargs="?",
        default=here.parents[1] / "shared/bench/locomo-dev/conv-26",
    )
    ap.add_argument("--baseline", metavar="REV")
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.workspace = args.workspace.resolve()
    with _tmpdir() as tmp:
        rows = run(args, tmp)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        report(rows, args.baseline)


@contextlib.contextmanager
def _tmpdir() -> Iterator[Path]:
    # Short: a Unix socket path must stay under ~104 bytes.
    path = Path(tempfile.mkdtemp(prefix="md-su-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
