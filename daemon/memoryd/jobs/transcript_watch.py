"""The transcripts the daemon watches feed their sessions' trust (docs/provenance.md).

A workspace's transcripts (``sessions/<id>.jsonl``, OpenClaw's copies in
``sessions/openclaw/<agent>/``) are the sessions' own record of what they read. When the
watch sees one change, it is read (from where the last read ended) as its observers would
have reported it (``SessionTrust.observe_transcript``), on that workspace's index writer
after the sync of what changed before it: the session's writes then take what it read even
when no hook or plugin runs. A transcript not written for ``ACTIVE_S`` (restored, moved in,
archived) belongs to a session that is over, and a forgotten session's is never read.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import threading
import time
from pathlib import Path
from typing import Final

from memoryd.files.layout import OPENCLAW_SESSIONS_DIR, SESSIONS_DIR
from memoryd.files.provenance import ledger_for
from memoryd.files.transcripts import head_sessions
from memoryd.jobs.session_trust import SessionTrust
from memoryd.runtime.logs import get_logger
from memoryd.workspace.registry import Registry

log = get_logger("memoryd.trust")

ACTIVE_S: Final = 86400.0
MAX_KNOWN: Final = 4096  # transcripts whose session is remembered


def transcript_root(path: Path) -> Path | None:
    """The workspace folder whose transcript ``path`` is, or None when it is not one:
    ``ROOT/sessions/<id>.jsonl`` or ``ROOT/sessions/openclaw/<agent>/<id>.jsonl``."""
    if path.suffix != ".jsonl":
        return None
    parent = path.parent
    if parent.name == SESSIONS_DIR:
        return parent.parent
    if parent.parent.name == OPENCLAW_SESSIONS_DIR and parent.parent.parent.name == SESSIONS_DIR:
        return parent.parent.parent.parent
    return None


class TranscriptWatch:
    """The watcher's listener (``Watcher.listeners``): called on the event loop with a
    workspace's changed files; the reading is queued on that workspace's index writer."""

    def __init__(self, trust: SessionTrust, registry: Registry) -> None:
        self.trust = trust
        self.registry = registry
        self._lock = threading.Lock()
        self._queued: set[Path] = set()  # read soon: a second change adds nothing
        self._sessions: dict[Path, str] = {}  # transcript -> the session it records

    def notify(self, name: str, paths: set[Path]) -> None:
        ws = self.registry.get(name)
        index = ws.index if ws is not None else None
        if ws is None or index is None:
            return
        for path in paths:
            if transcript_root(path) != ws.root:
                continue
            with self._lock:
                if path in self._queued:
                    continue
                self._queued.add(path)
            with contextlib.suppress(RuntimeError):  # the index is closing
                index.on_writer(functools.partial(self._on_writer, path, ws.root))

    def _on_writer(self, path: Path, root: Path, _conn: object) -> None:
        self.read(path, root)

    def read(self, path: Path, root: Path) -> None:
        """Read transcript ``path`` of the workspace at ``root`` for its session (on the
        index writer). A file that is gone, not regular, old or forgotten is left alone."""
        with self._lock:
            self._queued.discard(path)
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode) or time.time() - st.st_mtime > ACTIVE_S:
                return
            session = self._session_of(path)
            if session in ledger_for(root).forgotten_sessions:
                return
            self.trust.observe_transcript(session, path)
        except OSError as exc:
            log.debug("transcript_not_read", path=str(path), error=str(exc))
        except Exception:  # on the writer's future, which nobody reads: say it here
            log.exception("transcript_trust_failed", path=str(path))

    def _session_of(self, path: Path) -> str:
        """The session a transcript records: the one its first lines name, else its name."""
        with self._lock:
            known = self._sessions.get(path)
        if known is not None:
            return known
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        found = next(iter(head_sessions(fd)), None) or path.name.removesuffix(".jsonl")
        with self._lock:
            if len(self._sessions) >= MAX_KNOWN:
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[path] = found
        return found
