"""Attacks too slow for the test run, each a bounded number of trials; prints a table.

    python bench/chaos.py [--cases a,b] [--trials N] [--big-mb 2048] [--daily-mb 200]
                          [--baseline DIR] [--json]

Every case runs in a subprocess of its own (its peak RSS is its own), on real files, a
real daemon on a real socket, the fake OpenAI server for LLM answers. A row is
(case, trials, failures, notes lost, notes): a failure is a trial that broke a promise (a
read or write outside the workspace, a torn note, a run past its bounds); notes lost are
notes acknowledged to the caller and then not on disk.

``--baseline DIR`` runs the same cases again against the code of another checkout
(``git worktree add DIR <commit>``; its daemon/ and client/ go first on the path), so the
table shows what the change fixed, measured in the same run on the same machine. Cases
whose API the baseline lacks still run: they use the socket protocol and the jobs only.

Cases (issue 13):
  race       memory/ exchanged with a link to outside (renameat2 RENAME_EXCHANGE) while
             get and append run through the daemon; failures: reads or appends outside
  full_disk  appends of random size into a small tmpfs filled to a random level (root);
             failures: a daily file left neither as before nor with the whole block
  names      a scan of 400 notes among which 40 have names that are not UTF-8; failures:
             good notes not searchable
  big_transcript  fallback_summary --dry-run over one idle transcript of --big-mb MB;
             failures: peak RSS over 512 MB
  big_daily  hippocampus with one daily file of --daily-mb MB; failures: LLM calls over
             llm.max_calls_per_run (50)
  kill_index, kill_append, kill_hippocampus  kill -9 at random moments of a startup scan,
             of 4 writers' appends, around hippocampus's write; failures: after a restart
             the index is not the disk, an acknowledged note is missing, torn or doubled,
             MEMORY.md is partial, a temp file is left, a run that wrote is recorded failed
  backpressure  64 pipelined gets of a 15 MiB file never read, 40 unfinished 16 MiB frames;
             failures: the daemon's RSS grows by hundreds of MB
  corrupt_index  an index's pages overwritten with garbage (or the file cut in half) under
             the running daemon, then an append; failures: the note, or earlier ones, not
             searchable within a minute, or another workspace not answering meanwhile
  soak       searchers and writers together; failures: errors, appends not found after
  idle_connections  thousands of idle connections: each served or refused politely
             (unavailable), a new client still served, RSS and log lines noted
  sigterm_transcript, sigterm_scan  SIGTERM during the sync of a big transcript and during
             a long startup scan; failures: more than a few seconds to exit (the scan's
             whole duration is measured beside it); the restart resumes
  The process cases are sized for a few minutes; --long gives the campaign's sizes
  (bench/_chaos_process.py says which).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import datetime as dt
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"

Row = dict[str, Any]  # case, trials, failures, lost, notes


def _row(case: str, trials: int, failures: int, lost: int, notes: str) -> Row:
    return {"case": case, "trials": trials, "failures": failures, "lost": lost, "notes": notes}


@contextlib.contextmanager
def _home() -> Iterator[Path]:
    import shutil

    home = Path(tempfile.mkdtemp(prefix="mdc", dir="/tmp"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


# -- race -------------------------------------------------------------------------------


def case_race(args: argparse.Namespace) -> Row:
    from daemon_util import DaemonThread, RawConn, error_code

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if not hasattr(libc, "renameat2"):
        return _row("race", 0, 0, 0, "skipped: no renameat2")
    swap2 = libc.renameat2
    swap2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    with _home() as home:
        ws, out = home / "ws", home / "out"
        (ws / "memory").mkdir(parents=True)
        out.mkdir()
        (ws / "memory" / "2024-01-01.md").write_text("inside note\n")
        (out / "2024-01-01.md").write_text("OUTSIDE SECRET\n")
        (ws / "swap").symlink_to("../out")
        a, b = os.fsencode(ws / "memory"), os.fsencode(ws / "swap")
        stop = threading.Event()

        def swap() -> None:
            while not stop.is_set():
                swap2(-100, a, -100, b, 2)

        reads_out = errors = 0
        acked: list[str] = []
        with DaemonThread(home) as d, RawConn(d.socket_path) as c:
            c.result("workspace.add", {"path": str(ws)})
            t = threading.Thread(target=swap)
            t.start()
            try:
                for i in range(args.trials):
                    got = c.call("get", {"path": "memory/2024-01-01.md"})
                    if got is not None and "OUTSIDE" in str(got.get("result", {}).get("text")):
                        reads_out += 1
                    note = f"note-{i}-x"
                    reply = c.call("append", {"text": note, "date": "2024-01-01"})
                    code = error_code(reply)
                    if code is None:
                        acked.append(note)
                    elif code not in ("forbidden_path", "not_found"):
                        errors += 1
            finally:
                stop.set()
                t.join()
        outside = (out / "2024-01-01.md").read_text()
        inside = ""
        for folder in (ws / "memory", ws / "swap"):  # wherever memory/ ended up
            if folder.is_dir() and not folder.is_symlink():
                inside = (folder / "2024-01-01.md").read_text()
        writes_out = sum(1 for n in acked if n in outside)
        lost = sum(1 for n in acked if n not in inside and n not in outside)
        return _row(
            "race",
            2 * args.trials,
            reads_out + writes_out,
            lost,
            f"{reads_out} reads and {writes_out} appends outside, {errors} internal errors",
        )


# -- full disk --------------------------------------------------------------------------


def case_full_disk(args: argparse.Namespace) -> Row:
    from memoryd.files.append import Appender

    if os.geteuid() != 0:
        return _row("full_disk", 0, 0, 0, "skipped: mounting a tmpfs needs root")
    rng = random.Random(7)
    day = dt.date(2024, 3, 9)
    torn = lost = refused = 0
    with _home() as home:
        fs = home / "fs"
        fs.mkdir()
        if subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(fs)],
            capture_output=True,
            check=False,
        ).returncode:
            return _row("full_disk", 0, 0, 0, "skipped: cannot mount a tmpfs")
        try:
            ws = fs / "ws"
            (ws / "memory").mkdir(parents=True)
            daily = ws / "memory" / f"{day.isoformat()}.md"
            app = Appender()
            for i in range(args.trials):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(fs / "filler")
                daily.write_text("# day\n\nfirst note\n")
                free = os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize
                fill = max(0, free - rng.randrange(0, 3) * 4096)
                fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT)
                with contextlib.suppress(OSError):
                    while fill > 0:
                        fill -= os.write(fd, b"x" * min(fill, 65536))
                os.close(fd)
                before = daily.read_bytes()
                text = f"note {i} " + "y" * rng.randrange(10, 12000)
                try:
                    app.append(ws, text, day)
                    ok = True
                except Exception:  # the baseline raises OSError, this code DiskFull
                    ok = False
                    refused += 1
                after = daily.read_bytes() if daily.exists() else b""
                whole = after.startswith(before) and text.encode() in after[len(before) :]
                if not (after == before or whole):
                    torn += 1
                if ok and not whole:
                    lost += 1
        finally:
            subprocess.run(["umount", "-l", str(fs)], check=False)
    return _row(
        "full_disk",
        args.trials,
        torn,
        lost,
        f"{refused} appends refused (disk full), {torn} daily files torn",
    )


# -- names ------------------------------------------------------------------------------


def case_names(args: argparse.Namespace) -> Row:
    from daemon_util import DaemonThread, RawConn

    with _home() as home:
        ws = home / "ws"
        mem = ws / "memory"
        mem.mkdir(parents=True)
        good = []
        for i in range(400):
            if i % 10 == 3:
                name = os.fsencode(mem) + b"/n%03d\xff.md" % i
            else:
                name = os.fsencode(mem / f"n{i:03d}.md")
                good.append(i)
            with open(name, "wb") as f:
                f.write(f"note word{i:03d}x\n".encode())
        with DaemonThread(home) as d, RawConn(d.socket_path, timeout=60) as c:
            c.result("workspace.add", {"path": str(ws)})
            c.call("reindex", {})
            missing = 0
            for i in good:
                found = c.call("search", {"query": f"word{i:03d}x", "mode": "keyword"})
                if not (found and found.get("result", {}).get("results")):
                    missing += 1
            status = c.call("status", {})
            skipped = 0
            if status and "result" in status:
                skipped = len(status["result"]["workspaces"][0].get("skipped", {}))
        return _row(
            "names",
            len(good),
            missing,
            0,
            f"{missing} of {len(good)} good notes not searchable; {skipped} listed under skipped",
        )


# -- big transcript ---------------------------------------------------------------------


def case_big_transcript(args: argparse.Namespace) -> Row:
    from jobs_util import NOW, JobHarness, set_mtime

    with _home() as home:
        ws = home / "ws"
        (ws / "sessions").mkdir(parents=True)
        path = ws / "sessions" / "big.jsonl"
        start = (NOW - dt.timedelta(hours=3)).isoformat()
        line = (
            json.dumps(
                {
                    "type": "message",
                    "timestamp": start,
                    "message": {"role": "user", "content": "z" * 4000},
                }
            )
            + "\n"
        )
        block = (line * 256).encode()
        with open(path, "wb") as f:
            f.write(
                (json.dumps({"type": "session", "id": "big", "timestamp": start}) + "\n").encode()
            )
            for _ in range(args.big_mb * (1 << 20) // len(block)):
                f.write(block)
        set_mtime(path, NOW - dt.timedelta(hours=1))
        h = JobHarness(ws, home / "state.sqlite")
        try:
            record = h.run("fallback_summary", dry_run=True)
        finally:
            h.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return _row(
        "big_transcript",
        1,
        int(rss_mb > 512),
        0,
        f"{args.big_mb} MB transcript: peak RSS {rss_mb:.0f} MB, run "
        f"{record.status}: {record.message[:80]}",
    )


# -- big daily file ---------------------------------------------------------------------


def case_big_daily(args: argparse.Namespace) -> Row:
    from fakes.openai_server import FakeOpenAIServer
    from jobs_util import NOW, JobHarness, llm_config

    with _home() as home, FakeOpenAIServer() as server:
        ws = home / "ws"
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text("# Memory\n\n- old fact\n")
        day = NOW.date().isoformat()
        line = b"- a note about the walrus count on the pier, and more words\n"
        with open(ws / "memory" / f"{day}.md", "wb") as f:
            for _ in range(args.daily_mb * (1 << 20) // (len(line) * 1000)):
                f.write(line * 1000)
        server.answer_chat_with(lambda body: "- extracted fact\n")
        h = JobHarness(
            ws,
            home / "state.sqlite",
            {
                "llm": llm_config(server.base_url),
                "index": {"max_file_bytes": (args.daily_mb + 1) << 20},
            },
        )
        try:
            record = h.run("hippocampus")
        finally:
            h.close()
        calls = len(server.requests_to("chat"))
    return _row(
        "big_daily",
        1,
        int(calls > 50),
        0,
        f"{args.daily_mb} MB daily file (under max_file_bytes): {calls} LLM calls, "
        f"run {record.status}: {record.message[:70]}",
    )


def _process_case(name: str) -> Callable[[argparse.Namespace], Row]:
    def case(args: argparse.Namespace) -> Row:
        from _chaos_process import run

        return run(name, args)

    return case


CASES: dict[str, Callable[[argparse.Namespace], Row]] = {
    "race": case_race,
    "full_disk": case_full_disk,
    "names": case_names,
    "big_transcript": case_big_transcript,
    "big_daily": case_big_daily,
    **{
        name: _process_case(name)
        for name in (
            "backpressure",
            "corrupt_index",
            "kill_index",
            "kill_append",
            "kill_hippocampus",
            "soak",
            "idle_connections",
            "sigterm_transcript",
            "sigterm_scan",
        )
    },
}


def run_case(name: str, args: argparse.Namespace, code: Path | None) -> Row:
    """One case in a subprocess (against ``code``'s daemon/ and client/ when given)."""
    env = dict(os.environ)
    paths = [str(TESTS)]
    if code is not None:
        paths = [str(code / "daemon"), str(code / "client"), *paths]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    cmd = [
        sys.executable,
        __file__,
        "--run-case",
        name,
        "--trials",
        str(args.trials),
        "--big-mb",
        str(args.big_mb),
        "--daily-mb",
        str(args.daily_mb),
        *(["--long"] if args.long else []),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            row: Row = json.loads(line)
            return row
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return _row(name, 0, 1, 0, f"crashed: {tail[:100]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--big-mb", type=int, default=2048)
    ap.add_argument("--daily-mb", type=int, default=200)
    ap.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    ap.add_argument(
        "--long",
        action="store_true",
        help="the process cases at the campaign's sizes (hours, not minutes)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--run-case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run_case:
        sys.path.insert(0, str(TESTS))
        print(json.dumps(CASES[args.run_case](args)))
        return
    rows: list[Row] = []
    if not args.json:
        print(f"{'case':<15} {'code':<9} {'trials':>7} {'failures':>8} {'lost':>5}  notes")
    for name in args.cases.split(","):
        for label, code in (("this", None), ("baseline", args.baseline)):
            if label == "baseline" and code is None:
                continue
            row = run_case(name, args, code)
            row["code"] = label
            rows.append(row)
            if not args.json:
                print(
                    f"{row['case']:<15} {label:<9} {row['trials']:>7} {row['failures']:>8} "
                    f"{row['lost']:>5}  {row['notes']}",
                    flush=True,
                )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
