"""What memory costs each agent, per day: ``memctl stats`` (docs/cli.md).

Counted in the state database (``agent_usage``: day, agent, workspace, metric -> value):

- ``recalls``, ``recall_empty`` (recall had nothing to say), ``recall_tokens`` (the tokens
  of the blocks injected: the block's characters / 4, as recall budgets them);
- ``digests``, ``digest_tokens``: the session-start digests a hook injected (the hook
  builds them; it reports them with ``stats.record``);
- ``llm_tokens_flush``, ``llm_tokens_hippocampus``, ``llm_tokens_fallback_summary``: what
  the LLM calls of those runs used (the endpoint's ``usage``, else the characters / 4);
- ``recalled_searched`` (a line recall injected came back in a later search of the same
  workspace) and ``recalled_cited`` (a later transcript flush found it cited,
  ``path#Lx``), counted once per recalled line, for the agent it was recalled for.

Recording costs the caller a ``deque.append`` (search and recall stay off the disk): a
background thread sums them and writes them about once a second, as hit counting does
(lifecycle/hits.py). The recalled lines are remembered in memory (the last
``RECALLED_KEPT``), so a restart forgets which were recalled, not the counts.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from memoryd.records import Record
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

log = get_logger("memoryd.runtime.usage")

MAX_QUEUED: Final = 10_000
COALESCE_S: Final = 1.0
RECALLED_KEPT: Final = 5_000  # recalled line ranges remembered for "searched again / cited"
RECALLED_DAYS: Final = 30
CLIENT_METRICS: Final = ("digests", "digest_tokens")  # what stats.record may add
AGENT_CHARS: Final = 40
_CITATION: Final = re.compile(r"([\w./-]+\.md)#L(\d+)(?:-L(\d+))?")


def tokens_of(text: str) -> int:
    return (len(text) + 3) // 4


def agent_name(name: str | None) -> str:
    """An agent's name as counted: what the caller said (or its client name), bounded."""
    clean = re.sub(r"[^\w.-]+", "-", (name or "").strip())[:AGENT_CHARS].strip("-")
    return clean or "unknown"


@frozen_record(frozen=True, eq=False, repr=False)
class _Recalled(Record):
    """Which agent a recall served, and when."""

    agent: str
    at: float


class Usage:
    def __init__(self, state: StateDB) -> None:
        self.state = state
        self._queue: deque[tuple[str, str, str, str, int]] = deque(maxlen=MAX_QUEUED)
        self._recalled: OrderedDict[tuple[str, str, int], _Recalled] = OrderedDict()
        self._recalled_lock = threading.Lock()
        self._wake = threading.Event()
        self._flush = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ recording

    def add(self, day: str, agent: str, workspace: str, metric: str, value: int = 1) -> None:
        """Count ``value`` of ``metric``; returns at once."""
        if self._closed or value <= 0:
            return
        self._queue.append((day, agent_name(agent), workspace, metric, int(value)))
        self._idle.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memoryd-usage", daemon=True)
            self._thread.start()
        self._wake.set()

    def recalled(self, day: str, agent: str, workspace: str, result: Mapping[str, Any]) -> None:
        """A recall's answer: counted, and its lines remembered for later searches/citations."""
        markdown = str(result.get("markdown") or "")
        self.add(day, agent, workspace, "recalls")
        if not markdown:
            self.add(day, agent, workspace, "recall_empty")
            return
        self.add(day, agent, workspace, "recall_tokens", tokens_of(markdown))
        now = time.time()
        with self._recalled_lock:
            for hit in result.get("results") or []:
                start, end = int(hit.get("start_line") or 0), int(hit.get("end_line") or 0)
                for line in range(start, min(end, start + 200) + 1):
                    key = (workspace, str(hit.get("path")), line)
                    self._recalled[key] = _Recalled(agent_name(agent), now)
                    self._recalled.move_to_end(key)
            while len(self._recalled) > RECALLED_KEPT:
                self._recalled.popitem(last=False)

    def searched(self, day: str, workspace: str, ranges: Iterable[tuple[str, int, int]]) -> None:
        """A search's hits, each (path, start line, end line): a recalled line among them
        counts once as searched again (``ranges`` is read only while lines are recalled)."""
        self._seen_again(day, workspace, "recalled_searched", ranges)

    def cited(self, day: str, workspace: str, text: str) -> None:
        """A transcript's text: a recalled line it cites (``path#Lx``) counts once as cited."""
        found = (
            (m.group(1), int(m.group(2)), int(m.group(3) or m.group(2)))
            for m in _CITATION.finditer(text)
        )
        self._seen_again(day, workspace, "recalled_cited", found)

    def _seen_again(
        self, day: str, workspace: str, metric: str, ranges: Iterable[tuple[str, int, int]]
    ) -> None:
        if not self._recalled:
            return
        oldest = time.time() - RECALLED_DAYS * 86400
        counted: dict[str, int] = {}
        with self._recalled_lock:
            for path, start, end in ranges:
                for line in range(start, min(end, start + 200) + 1):
                    got = self._recalled.pop((workspace, path, line), None)
                    if got is not None and got.at >= oldest:
                        counted[got.agent] = counted.get(got.agent, 0) + 1
                        break  # one per hit
        for agent, n in counted.items():
            self.add(day, agent, workspace, metric, n)

    # ------------------------------------------------------------ reading

    def report(self, since: str, workspace: str | None = None) -> list[dict[str, Any]]:
        """``[{day, agent, workspace, metrics: {name: value}}]`` from ``since`` on, newest first."""
        self.wait_idle()
        sql = "SELECT day, agent, workspace_path, metric, value FROM agent_usage WHERE day >= ?"
        args: list[Any] = [since]
        if workspace is not None:
            sql += " AND workspace_path = ?"
            args.append(workspace)
        rows: dict[tuple[str, str, str], dict[str, int]] = {}
        with self.state.lock:
            for day, agent, ws, metric, value in self.state.conn.execute(sql, args):
                rows.setdefault((day, agent, ws), {})[metric] = int(value)
        return [
            {"day": d, "agent": a, "workspace": w, "metrics": m}
            for (d, a, w), m in sorted(rows.items(), key=lambda r: (r[0][0], r[0][1]), reverse=True)
        ]

    # ------------------------------------------------------------ the writer

    def wait_idle(self, timeout: float = 5.0) -> bool:
        if self._queue:
            self._flush.set()
            self._wake.set()
        return self._idle.wait(timeout)

    def close(self) -> None:
        """Stop taking counts; what is queued is written (a few seconds at most)."""
        self._closed = True
        self._flush.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._closed or self._queue:
            self._wake.wait(1.0)
            self._wake.clear()
            if self._queue and not self._flush.is_set() and not self._closed:
                self._flush.wait(COALESCE_S)
            self._flush.clear()
            batch: dict[tuple[str, str, str, str], int] = {}
            while self._queue:
                *key, value = self._queue.popleft()
                k = (key[0], key[1], key[2], key[3])
                batch[k] = batch.get(k, 0) + value
            if batch:
                try:
                    with self.state.lock, self.state.conn:
                        self.state.conn.executemany(
                            "INSERT INTO agent_usage(day, agent, workspace_path, metric, value) "
                            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(day, agent, workspace_path, "
                            "metric) DO UPDATE SET value = value + excluded.value",
                            [(*k, v) for k, v in batch.items()],
                        )
                except Exception:  # counting must never take the daemon down
                    if not self._closed:
                        log.exception("usage_write_failed", rows=len(batch))
            if not self._queue:
                self._idle.set()
            if self._closed:
                return
