"""The process cases of bench/chaos.py (issue 13 items 5, 6, 10-12): kill -9 loops during
indexing, appends and hippocampus's write, a soak with writers, idle connections, SIGTERM
during a big transcript and during a long scan. Each drives ``memoryd run`` subprocesses
(so ``--baseline`` runs them against the other checkout's daemon too).

Sizes (``--long`` in brackets): corrupt_index 4 trials [10]; kill_index 3 trials x 50 new
files [10 x 200]; kill_append 3 [20]; kill_hippocampus 4 [20]; soak 20 s, 8 searchers,
2 writers [120 s, 32, 8]; idle_connections 2,000 [10,000]; sigterm_transcript 200 MB
[2 GB]; sigterm_scan 3,000 files [10,000].
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes.openai_server import FakeOpenAIServer
from memoryd_client import MemoryClient, protocol

MiB = 1024 * 1024


@dataclass
class Tally:
    case: str
    trials: int = 0
    failures: int = 0
    lost: int = 0
    notes: list[str] = field(default_factory=list)

    def fail(self, why: str) -> None:
        self.failures += 1
        if len(self.notes) < 6:
            self.notes.append(why)

    def row(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "trials": self.trials,
            "failures": self.failures,
            "lost": self.lost,
            "notes": "; ".join(self.notes),
        }


class Daemon:
    """``memoryd run`` in a subprocess on a home of its own."""

    def __init__(self, home: Path, config: str = "") -> None:
        self.home = home
        self.socket = home / "run" / "memoryd.sock"
        (home / "config.toml").write_text(config)
        env = {**os.environ, "MEMORYD_HOME": str(home), "MEMORYD_EMBEDDING_PROVIDER": "none"}
        env.pop("MEMORYD_SOCKET", None)
        env.pop("MEMORYD_CONFIG", None)
        self.log = open(home / "daemon.log", "ab")  # noqa: SIM115 - closed in wait()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "memoryd.cli", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )

    def ready(self, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                return False
            try:
                with MemoryClient(self.socket, timeout=5) as c:
                    c.call("hello")
                return True
            except Exception:
                time.sleep(0.02)
        return False

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> Any:
        with MemoryClient(self.socket, timeout=timeout) as c:
            return c.call(method, params or {})

    def workspace(self) -> dict[str, Any]:
        return dict(self.call("status")["workspaces"][0])

    def scan_done(self, timeout: float = 300) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            scan = self.workspace().get("startup_scan", {})
            if scan.get("running") is False and "seconds" in scan:
                return True
            time.sleep(0.1)
        return False

    def kill9(self) -> None:
        self.p.kill()
        self.wait()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.p.wait(timeout)
        finally:
            self.log.close()

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.p.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_s(self) -> float:
        """The daemon's CPU time so far (user + system, all threads): what a request costs
        it, which a loaded machine changes far less than requests per second."""
        fields = Path(f"/proc/{self.p.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in (self.home / "daemon.log").read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == name:
                out.append(event)
        return out


@contextmanager
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mdc", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def ws_config(ws: Path, extra: str = "") -> str:
    return f'{extra}\n[[workspaces]]\npath = "{ws}"\n'


def notes_folder(root: Path, files: int, tag: str) -> list[str]:
    """``files`` notes, each with a unique word; returns the words."""
    (root / "memory").mkdir(parents=True, exist_ok=True)
    words = []
    for i in range(files):
        word = f"{tag}x{i}zq"
        (root / "memory" / f"{tag}-{i:05d}.md").write_text(
            f"# {tag} {i}\n\n"
            + "".join(f"line {j} about subject{j % 11}\n" for j in range(20))
            + f"the unique word is {word}\n"
        )
        words.append(word)
    return words


# -- cases ---------------------------------------------------------------------------------


def kill_index(long: bool) -> Tally:
    row = Tally("kill_index")
    trials, per = (10, 200) if long else (3, 50)
    with home() as h:
        ws = h / "ws"
        (ws / "memory").mkdir(parents=True)
        (ws / "MEMORY.md").write_text("# Memory\n")
        words: list[str] = []
        for t in range(trials):
            row.trials += 1
            words += notes_folder(ws, per, f"t{t}")
            d = Daemon(h, ws_config(ws))
            if not d.ready():
                row.fail(f"trial {t}: start failed")
                d.kill9()
                continue
            time.sleep(random.uniform(0.0, 1.5))
            d.kill9()
        d = Daemon(h, ws_config(ws))
        try:
            if not d.ready() or not d.scan_done():
                row.fail("final start or scan failed")
                return row
            files = d.workspace()["files"]
            on_disk = 1 + len(list((ws / "memory").glob("*.md")))
            if files != on_disk:
                row.fail(f"index has {files} files, disk {on_disk}")
            missing = [
                w for w in words if not d.call("search", {"query": w, "mode": "keyword"})["results"]
            ]
            row.lost += len(missing)
            if missing:
                row.fail(f"{len(missing)} unique words not found")
            if d.events("index_corrupt"):
                row.fail("an index was moved aside as corrupt")
            row.notes.append(f"{len(words)} files written across the kills")
        finally:
            d.kill9()
    return row


def kill_append(long: bool) -> Tally:
    row = Tally("kill_append")
    trials = 20 if long else 3
    pattern = re.compile(r"^- note (\d+)-(\d+)-(\d+) [a-z]+$")
    with home() as h:
        ws = h / "ws"
        (ws / "memory").mkdir(parents=True)
        acked: set[str] = set()
        total = 0
        for t in range(trials):
            row.trials += 1
            d = Daemon(h, ws_config(ws))
            if not d.ready():
                row.fail(f"trial {t}: start failed")
                d.kill9()
                continue
            stop = threading.Event()

            def writer(w: int, t: int = t, d: Daemon = d, stop: threading.Event = stop) -> None:
                i = 0
                try:
                    with MemoryClient(d.socket, timeout=10) as c:
                        while not stop.is_set():
                            key = f"{t}-{w}-{i}"
                            c.call(
                                "append",
                                {
                                    "text": f"- note {key} " + "abc" * (i % 5 + 1),
                                    "date": "2025-06-01",
                                },
                            )
                            acked.add(key)
                            i += 1
                except Exception:
                    pass  # the kill

            threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
            for th in threads:
                th.start()
            time.sleep(random.uniform(0.3, 2.0))
            d.kill9()
            stop.set()
            for th in threads:
                th.join()
        d = Daemon(h, ws_config(ws))
        try:
            if not d.ready():
                row.fail("final start failed")
        finally:
            d.kill9()
        daily = ws / "memory" / "2025-06-01.md"
        text = daily.read_text() if daily.exists() else ""
        seen: dict[str, int] = {}
        torn = 0
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            m = pattern.match(line)
            if m is None:
                torn += 1
                continue
            key = "-".join(m.groups())
            seen[key] = seen.get(key, 0) + 1
            total += 1
        lost = acked - set(seen)
        row.lost += len(lost)
        if lost:
            row.fail(f"{len(lost)} acknowledged notes missing")
        if torn:
            row.fail(f"{torn} torn lines")
        twice = [k for k, n in seen.items() if n > 1]
        if twice:
            row.fail(f"{len(twice)} notes written twice")
        row.notes.append(f"{len(acked)} notes acknowledged, {total} in the file")
    return row


def kill_hippocampus(long: bool) -> Tally:
    row = Tally("kill_hippocampus")
    trials = 20 if long else 4
    old = "# Memory\n\n## People\n\n- Alice prefers tea.\n\n## Projects\n\n- memoryd.\n"
    today = dt.date.today().isoformat()
    with home() as h, FakeOpenAIServer() as llm:
        ws = h / "ws"
        (ws / "memory").mkdir(parents=True)
        config = ws_config(
            ws,
            f'[llm]\nbase_url = "{llm.base_url}"\nmodel = "fake"\n'
            'api_key = "sk-fake-000000"\nmax_retries = 0\n',
        )
        wrote = 0
        for t in range(trials):
            row.trials += 1
            (ws / "MEMORY.md").write_text(old)
            (ws / "memory" / f"{today}.md").write_text(
                f"# {today}\n\n- trial {t}: Alice switched to coffee.\n"
            )
            new = old.replace("tea", f"coffee (trial {t})")
            delay = random.uniform(0.2, 0.6)
            llm.respond_chat(new, delay=delay)
            d = Daemon(h, config)
            if not d.ready():
                row.fail(f"trial {t}: start failed")
                d.kill9()
                continue

            def run(d: Daemon = d) -> None:
                with suppress(Exception):  # the kill
                    d.call("jobs.run", {"name": "hippocampus", "workspace": "ws"}, timeout=30)

            asked = len(llm.requests_to("chat"))
            th = threading.Thread(target=run)
            th.start()
            deadline = time.monotonic() + 20
            while len(llm.requests_to("chat")) == asked and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(delay + random.uniform(-0.03, 0.12))  # around the answer and write
            d.kill9()
            th.join()
            now = (ws / "MEMORY.md").read_text()
            if now not in (old, new):
                row.fail(f"trial {t}: MEMORY.md is neither the old nor the new text")
            d = Daemon(h, config)
            try:
                if not d.ready():
                    row.fail(f"trial {t}: restart failed")
                    continue
                d.scan_done()  # the workspace opens (and its temp files go) in the background
                temps = list(ws.glob(".MEMORY.md.*.tmp"))
                if temps:
                    row.fail(f"trial {t}: {len(temps)} temp files left")
                runs = d.call("jobs.list", {"workspace": "ws", "name": "hippocampus"})
                last = _last_run(runs, "hippocampus")
                if now == new:
                    wrote += 1
                    if last is not None and last.get("status") == "failed":
                        row.fail(f"trial {t}: wrote MEMORY.md, recorded failed")
            finally:
                d.kill9()
        row.notes.append(f"{wrote} of {trials} kills came after the write")
    return row


def _last_run(listing: Any, job: str) -> dict[str, Any] | None:
    for entry in listing.get("jobs", []) if isinstance(listing, dict) else []:
        if entry.get("name") == job and isinstance(entry.get("last_run"), dict):
            return dict(entry["last_run"])
    return None


def soak(long: bool) -> Tally:
    row = Tally("soak")
    seconds, searchers, writers = (120, 32, 8) if long else (20, 8, 2)
    row.trials = 1
    with home() as h:
        ws = h / "ws"
        notes_folder(ws, 300, "soak")
        d = Daemon(h, ws_config(ws))
        try:
            if not d.ready() or not d.scan_done():
                row.fail("start failed")
                return row
            cpu0 = d.cpu_s()
            stop = time.monotonic() + seconds
            acked: list[str] = []
            errors: list[str] = []
            counts = [0]

            def search() -> None:
                with MemoryClient(d.socket, timeout=30) as c:
                    while time.monotonic() < stop:
                        try:
                            c.call("search", {"query": f"subject{random.randrange(11)}"})
                            counts[0] += 1
                        except Exception as exc:
                            errors.append(type(exc).__name__)

            def write(w: int) -> None:
                i = 0
                with MemoryClient(d.socket, timeout=30) as c:
                    while time.monotonic() < stop:
                        word = f"soakw{w}n{i}qz"
                        try:
                            c.call("append", {"text": f"- soak note {word}"})
                            acked.append(word)
                        except Exception as exc:
                            errors.append(type(exc).__name__)
                        i += 1
                        time.sleep(0.05)

            threads = [threading.Thread(target=search) for _ in range(searchers)] + [
                threading.Thread(target=write, args=(w,)) for w in range(writers)
            ]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            cpu_ms = (d.cpu_s() - cpu0) * 1000 / max(1, counts[0] + len(acked))
            missing = [
                w for w in acked if not d.call("search", {"query": w, "mode": "keyword"})["results"]
            ]
            row.lost += len(missing)
            if missing:
                row.fail(f"{len(missing)} acknowledged appends not found")
            if errors:
                row.fail(f"{len(errors)} errors: {sorted(set(errors))}")
            row.notes.append(
                f"{counts[0] / seconds:.0f} searches/s, {len(acked)} appends, daemon CPU "
                f"{cpu_ms:.2f} ms a request, RSS {d.rss_mb():.0f} MB, load "
                f"{os.getloadavg()[0]:.1f}"
            )
        finally:
            d.kill9()
    return row


def idle_connections(long: bool) -> Tally:
    row = Tally("idle_connections")
    n = 10_000 if long else 2_000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 512)), hard))
    row.trials = 1
    with home() as h:
        d = Daemon(h)  # server.max_connections: 1,000 by default
        socks: list[socket.socket] = []
        try:
            if not d.ready():
                row.fail("start failed")
                return row
            base = d.rss_mb()
            refused = served = 0
            for _ in range(n):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    s.connect(str(d.socket))
                except OSError as exc:
                    row.fail(f"connect failed: {exc}")
                    s.close()
                    break
                socks.append(s)
            for s in socks:  # one hello each: the first 1,000 are served
                s.settimeout(10)
                with suppress(OSError):  # a refused one may be closed already
                    s.sendall(protocol.pack(protocol.request(1, "hello")))
                try:
                    head = _recv_exact(s, 4)
                    frame = protocol.unpack(_recv_exact(s, protocol.frame_length(head)))
                except (OSError, protocol.FrameError, EOFError):
                    row.fail("a connection got neither an answer nor a refusal")
                    continue
                if frame.get("ok"):
                    served += 1
                elif frame.get("error", {}).get("code") == "unavailable":
                    refused += 1
                else:
                    row.fail(f"unexpected frame {frame}")
            for s in socks[:10]:  # room again: a new client is served at once
                s.close()
            del socks[:10]
            new_client = "a new client is served after 10 close"
            deadline = time.monotonic() + 10
            while True:
                try:
                    d.call("hello", timeout=10)
                    break
                except Exception as exc:
                    if time.monotonic() > deadline:
                        row.fail(f"a new client failed: {exc}")
                        new_client = "a new client FAILED"
                        break
                    time.sleep(0.05)
            log_lines = sum(1 for _ in (h / "daemon.log").open(errors="replace"))
            row.notes.append(
                f"{n} opened: {served} served, {refused} refused; {new_client}; "
                f"RSS {base:.0f} -> {d.rss_mb():.0f} MB; {log_lines} log lines"
            )
        finally:
            for s in socks:
                s.close()
            d.kill9()
    return row


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def sigterm_transcript(long: bool) -> Tally:
    row = Tally("sigterm_transcript")
    size = 2048 * MiB if long else 200 * MiB
    row.trials = 1
    with home() as h:
        ws = h / "ws"
        (ws / "sessions").mkdir(parents=True)
        (ws / "memory").mkdir()
        path = ws / "sessions" / "big.jsonl"
        with path.open("w") as f:
            f.write(
                json.dumps(
                    {
                        "type": "session",
                        "version": 1,
                        "id": "big",
                        "timestamp": "2025-06-01T10:00:00Z",
                    }
                )
                + "\n"
            )
            line = json.dumps(
                {
                    "type": "message",
                    "message": {
                        "role": "user",
                        "content": "a long transcript line about the quokka " * 20,
                    },
                }
            )
            written = 0
            while written < size:
                f.write(line + "\n")
                written += len(line) + 1
        config = ws_config(ws, "[index]\nsessions = true\n")
        d = Daemon(h, config)
        try:
            if not d.ready():
                row.fail("start failed")
                return row
            time.sleep(3)  # well into the transcript
            rss = d.rss_mb()
            t0 = time.monotonic()
            d.p.send_signal(signal.SIGTERM)
            code = d.wait(120)
            stop_s = time.monotonic() - t0
            if code != 0:
                row.fail(f"exit code {code}")
            if stop_s > 5:
                row.fail(f"SIGTERM took {stop_s:.1f} s")
        except subprocess.TimeoutExpired:
            row.fail("SIGTERM did not stop it in 120 s")
            d.kill9()
            return row
        d = Daemon(h, config)
        try:
            started = time.monotonic()
            if not d.ready() or not d.scan_done(timeout=3600):
                row.fail("restart or resumed sync failed")
                return row
            if not d.call(
                "search", {"query": "quokka", "mode": "keyword", "sources": ["sessions"]}
            )["results"]:
                row.fail("the transcript is not searchable")
            row.notes.append(
                f"{size // MiB} MB: SIGTERM exit {stop_s:.2f} s (RSS {rss:.0f} MB "
                f"then); resumed sync {time.monotonic() - started:.0f} s, "
                f"RSS {d.rss_mb():.0f} MB"
            )
        finally:
            d.kill9()
    return row


def sigterm_scan(long: bool) -> Tally:
    row = Tally("sigterm_scan")
    files = 10_000 if long else 3_000
    row.trials = 1
    with home() as h:
        ws = h / "ws"
        notes_folder(ws, files, "s")
        d = Daemon(h, ws_config(ws))
        started = time.monotonic()
        if not d.ready() or not d.scan_done(timeout=3600):
            row.fail("reference scan failed")
            d.kill9()
            return row
        scan_s = time.monotonic() - started
        d.p.send_signal(signal.SIGTERM)
        d.wait()
        shutil.rmtree(h / "data")  # the same scan again, from nothing
        d = Daemon(h, ws_config(ws))
        if not d.ready():
            row.fail("start failed")
            d.kill9()
            return row
        time.sleep(min(1.0, scan_s / 4))
        t0 = time.monotonic()
        d.p.send_signal(signal.SIGTERM)
        try:
            code = d.wait(120)
        except subprocess.TimeoutExpired:
            row.fail("did not stop in 120 s")
            d.kill9()
            return row
        stop_s = time.monotonic() - t0
        if code != 0:
            row.fail(f"exit code {code}")
        if stop_s > 3:
            row.fail(f"SIGTERM took {stop_s:.1f} s")
        row.notes.append(
            f"{files} files: exit {stop_s:.2f} s after SIGTERM; the whole scan "
            f"takes {scan_s:.1f} s here ({stop_s / scan_s:.2f}x)"
        )
    return row


def backpressure(long: bool) -> Tally:
    """64 pipelined gets of a 15 MiB file never read, then 40 unfinished 16 MiB frames:
    the daemon's RSS growth for each (the attack measured 2.1 GB and 65 -> 721 MB)."""
    row = Tally("backpressure")
    row.trials = 2
    with home() as h:
        ws = h / "ws"
        (ws / "memory").mkdir(parents=True)
        line = "a line of a long memory file that an agent asks for whole\n"
        (ws / "MEMORY.md").write_text(line * (15 * MiB // len(line)))
        d = Daemon(h, ws_config(ws))
        socks: list[socket.socket] = []
        try:
            if not d.ready() or not d.scan_done():
                row.fail("start failed")
                return row
            d.call("get", {"path": "MEMORY.md", "lines": 1})
            base = d.rss_mb()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.socket))
            s.sendall(
                b"".join(
                    protocol.pack(protocol.request(i, "get", {"path": "MEMORY.md"}))
                    for i in range(64)
                )
            )
            socks.append(s)
            peak = base
            for _ in range(50):
                peak = max(peak, d.rss_mb())
                time.sleep(0.1)
            row.notes.append(f"64 gets unread: RSS {base:.0f} -> {peak:.0f} MB")
            if peak - base > 200:
                row.fail("pipelined gets grew the daemon by over 200 MB")
            s.close()
            socks.clear()
            time.sleep(2)
            base = d.rss_mb()
            body = b"\x00" * (8 * MiB)
            for _ in range(40):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(d.socket))
                s.sendall(struct.pack(">I", 16 * MiB))
                s.setblocking(False)
                socks.append(s)
            sent = [0] * len(socks)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                for i, s in enumerate(socks):
                    if sent[i] < len(body):
                        with suppress(BlockingIOError):
                            sent[i] += s.send(body[sent[i] : sent[i] + 256 * 1024])
                time.sleep(0.005)
            held = d.rss_mb()
            for s in socks:
                s.close()
            socks.clear()
            time.sleep(2)
            after = d.rss_mb()
            row.notes.append(
                f"40 unfinished 16 MiB frames ({sum(sent) // MiB} MB sent): RSS "
                f"{base:.0f} -> {held:.0f} MB, {after:.0f} MB after close"
            )
            if held - base > 300 or after - base > 100:
                row.fail("unfinished frames held memory")
        finally:
            for s in socks:
                s.close()
            d.kill9()
    return row


def _damage_index(index: Path, trial: int) -> None:
    """Everything into the main file (the WAL emptied), then garbage over its pages after
    the header (even trials) or the file cut in half (odd ones)."""
    import apsw

    conn = apsw.Connection(str(index))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except apsw.Error:  # damaged still (not rebuilt): damaged again all the same
        pass
    finally:
        conn.close()
    size = index.stat().st_size
    with open(index, "r+b") as f:
        if trial % 2:
            f.truncate(size // 2)
            return
        rnd = random.Random(trial)
        for off in range(4096, size, 4096):
            f.seek(off)
            f.write(rnd.randbytes(4096))


def corrupt_index(long: bool) -> Tally:
    """An index damaged under the running daemon, then an append: a trial fails when the
    appended note or earlier ones are not searchable within a minute (the index rebuilt
    from the markdown), or another workspace stops answering meanwhile."""
    row = Tally("corrupt_index")
    row.trials = 10 if long else 4
    with home() as h:
        ws, other = h / "ws", h / "other"
        words = notes_folder(ws, 200, "dmg")
        other_words = notes_folder(other, 20, "oth")
        config = f'[[workspaces]]\npath = "{ws}"\n[[workspaces]]\npath = "{other}"\n'
        d = Daemon(h, config)
        try:
            if not d.ready() or not d.scan_done():
                row.fail("start failed")
                return row
            index = Path(
                next(w for w in d.call("status")["workspaces"] if w["name"] == "ws")["index"]
            )

            def found(word: str, ws_name: str = "ws") -> bool:
                try:
                    params = {"query": word, "mode": "keyword", "workspace": ws_name}
                    return bool(d.call("search", params)["results"])
                except Exception:  # unavailable while the file is swapped
                    return False

            for trial in range(row.trials):
                _damage_index(index, trial)
                word = f"afterdamage{trial}zq"
                d.call("append", {"text": f"- {word}", "workspace": "ws"})
                if not found(other_words[trial], "other"):
                    row.fail(f"trial {trial}: the other workspace did not answer")
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not found(word):
                    time.sleep(0.2)
                if not found(word):
                    row.fail(f"trial {trial}: the appended note is not searchable")
                    continue
                lost = [w for w in random.Random(trial).sample(words, 20) if not found(w)]
                if lost:
                    row.fail(f"trial {trial}: {len(lost)} of 20 earlier notes not searchable")
            row.notes.append(f"{len(d.events('index_rebuilt'))} rebuilds logged")
        finally:
            d.kill9()
    return row


PROCESS_CASES: dict[str, Callable[[bool], Tally]] = {
    "corrupt_index": corrupt_index,
    "backpressure": backpressure,
    "kill_index": kill_index,
    "kill_append": kill_append,
    "kill_hippocampus": kill_hippocampus,
    "soak": soak,
    "idle_connections": idle_connections,
    "sigterm_transcript": sigterm_transcript,
    "sigterm_scan": sigterm_scan,
}


def run(name: str, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.monotonic()
    tally = PROCESS_CASES[name](bool(args.long))
    tally.notes.append(f"{time.monotonic() - t0:.0f} s")
    return tally.row()
