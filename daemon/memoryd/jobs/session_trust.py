"""What each agent session has read: the trust its writes take (docs/provenance.md).

A write's origin is the least trusted of what its caller declares and what its session
read since the user's last message. The observers say what a session reads, through the
``observe`` method: Claude Code's hooks (the prompt, every tool's result, the transcript
each hook gets), the OpenClaw plugin (every turn and tool call), and any agent that can
call memoryd on its turns (Hermes, Codex); and the session's transcript itself, wherever the
daemon finds it (a hook names it, the watch sees a workspace's ``sessions/`` change, or a write
names a session whose transcript ``TranscriptPlaces`` finds). The daemon keeps, per session id:

- ``turn``: the least trusted origin read since the user's last message (``owner`` when
  nothing outside was read): what an ``append`` of the session takes;
- ``stretch``: the same since the session's last flush; a flush write (the agent's notes of
  a stretch of conversation, ``via: "flush"``) takes it, then it starts over;
- ``save``: the stretch a Stop-hook save was asked about (``flush.agent``), until the user's
  next message: the save is written in the same turn, but it summarises earlier ones too.

A session no observer has seen is unknown: its writes take what their caller declares
(``mcp.append_origin = "untrusted"`` holds every MCP write for users who want that).
Observations can only lower trust; only the user's next message restores the turn's: as an
observer reports it, or as the transcript shows it when its time is later than everything the
session's state holds (an observer that saw a page after that message is never overruled by
a transcript read late).

An agent may write its transcript after it calls a tool (Claude Code queues its lines and
writes them a moment later): a write that names its tool call (the MCP server's
``claudecode/toolUseId``) re-reads the session's transcript until it shows that call, for at
most ``CALL_WAIT`` seconds, so the write is judged on everything the turn read before it.

Kept in the state database (a restart forgets nothing a turn read) and in memory; rows
not touched for ``KEEP_DAYS`` are dropped at start. Tool-call bindings (an MCP server
learns its session from the tool-use id Claude Code sends with each call, which its
PreToolUse hook reported first) live in memory only: they matter for a second.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from memoryd.files.provenance import Provenance, least_trusted
from memoryd.jobs.flush_origin import CallRule, Turns, outside_call
from memoryd.jobs.transcript_folders import TranscriptPlaces
from memoryd.records import Record
from memoryd.runtime.logs import get_logger
from memoryd.runtime.state import StateDB
from memoryd.secrets import redact

log = get_logger("memoryd.trust")

__all__ = ["EVENTS", "SessionState", "SessionTrust", "classify_read", "stored_state"]

EVENTS: Final = ("user_message", "read", "call")
CLEAN: Final = "owner"  # nothing outside read: the session takes what its caller declares
KEEP_DAYS: Final = 30
MAX_CALLS: Final = 4096  # tool-use ids kept for their MCP call (a second's worth, many times)
MAX_WHAT: Final = 200
MAX_WATCH_BYTES: Final = 4 << 20  # of a transcript read per observation
MAX_WATCHED: Final = 1024  # transcripts whose read offset is kept
# A write that names its tool call waits for its transcript to show the call: re-read every
# CALL_POLL seconds, CALL_POLLS times at most (CALL_WAIT in all), then judged as it stands.
CALL_POLL: Final = 0.025
CALL_POLLS: Final = 40
CALL_WAIT: Final = CALL_POLL * CALL_POLLS


def classify_read(
    tool: str | None, command: str | None, path: str | None, roots: tuple[Path, ...]
) -> str | None:
    """The origin of what a tool call brought into a session, or None when it brought
    nothing from outside: a tool named for the web, a browser or mail (flush's rule,
    flush_origin.OUTSIDE_TOOL), a shell command with a network client or a URL in it, or a
    file read from outside ``roots`` (the workspace and the agent's project)."""
    if tool and outside_call(tool, command):
        return "untrusted"
    if path:
        target = Path(path).expanduser()
        if not target.is_absolute():
            return None  # relative to the agent's project: inside it
        try:
            real = target.resolve()
        except (OSError, RuntimeError):
            return "untrusted"
        if not any(real == r or real.is_relative_to(r) for r in roots):
            return "untrusted"
    return None


@dataclass
class _Watched:
    """How far a transcript was read, and its turn state there."""

    ino: int
    offset: int  # read up to here (a line end)
    turns: Turns  # the turn state at that point


@dataclass(frozen=True, eq=False, repr=False)
class SessionState(Record):
    """What an agent session read in its current turn and stretch (its trust)."""

    turn: str = CLEAN
    stretch: str = CLEAN
    save: str | None = None
    kind: str | None = None
    what: str | None = None
    updated_at: float = 0.0

    def floor(self, via: str) -> str:
        """The least trusted origin a write of this session may have."""
        origin = self.turn if self.save is None else least_trusted(self.turn, self.save)
        return least_trusted(origin, self.stretch) if via == "flush" else origin

    def to_wire(self) -> dict[str, object]:
        out: dict[str, object] = {"origin": self.turn, "stretch": self.stretch}
        if self.save is not None:
            out["save"] = self.save
        if self.kind:
            out["session_kind"] = self.kind
        if self.what:
            out["what"] = self.what
        return out


class SessionTrust:
    """The sessions' observed trust. Thread-safe; every change is written through to the
    state database (a change only: a user message in a clean session writes nothing)."""

    def __init__(
        self,
        state: StateDB,
        now: Callable[[], float],
        places: TranscriptPlaces | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.state = state
        self.now = now
        self.sleep = sleep  # between the reads of a transcript that does not show a call yet
        self.places = places  # where a session's transcript may be found (None: nowhere)
        self._lock = threading.Lock()
        self._change = threading.RLock()  # one observation's read-modify-write at a time
        self._transcripts: OrderedDict[str, Path] = OrderedDict()  # session -> its transcript
        self._cache: dict[str, SessionState | None] = {}
        self._calls: OrderedDict[str, str] = OrderedDict()
        # (session, transcript) -> how far it was read for that session: a transcript whose
        # lines name another session than its file name is read whole for each of them
        self._watched: dict[tuple[str, str], _Watched] = {}
        # sessions whose transcript a write waited for in vain (no file): not waited for again
        self._unfound: OrderedDict[str, None] = OrderedDict()

    def prune(self) -> int:
        """Drop the sessions not heard of for KEEP_DAYS; how many went."""
        with self.state.lock, self.state.conn:
            self.state.conn.execute(
                "DELETE FROM session_trust WHERE updated_at < ?", (self.now() - KEEP_DAYS * 86400,)
            )
            gone = self.state.conn.changes()
        with self._lock:
            self._cache.clear()
        return gone

    def get(self, session_id: str) -> SessionState | None:
        """The session's state, None when no observer has seen it."""
        with self._lock:
            if session_id in self._cache:
                return self._cache[session_id]
        found = stored_state(self.state, session_id)
        with self._lock:
            self._cache[session_id] = found
        return found

    def _put(
        self, session_id: str, new: SessionState, old: SessionState | None, touch: bool = False
    ) -> SessionState:
        """Store ``new``; ``touch``: also when only its time changed (an outside read: a
        transcript's user message older than it must not start the turn over)."""
        if old is not None and replace(old, updated_at=new.updated_at) == new and not touch:
            return old  # nothing changed: no write
        with self.state.lock, self.state.conn:
            self.state.conn.execute(
                "INSERT INTO session_trust(session_id, turn, stretch, save, kind, what, "
                "updated_at) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET "
                "turn = excluded.turn, stretch = excluded.stretch, save = excluded.save, "
                "kind = excluded.kind, what = excluded.what, updated_at = excluded.updated_at",
                (
                    session_id,
                    new.turn,
                    new.stretch,
                    new.save,
                    new.kind,
                    new.what,
                    new.updated_at,
                ),
            )
        with self._lock:
            self._cache[session_id] = new
        return new

    def user_message(self, session_id: str, kind: str | None = None) -> SessionState:
        """The user spoke: the turn starts clean (what earlier turns read stays in the
        stretch, for the session's next flush)."""
        with self._change:
            old = self.get(session_id)
            base = old or SessionState()
            new = replace(
                base, turn=CLEAN, save=None, kind=kind or base.kind, updated_at=self.now()
            )
            return self._put(session_id, new, old)

    def read(
        self,
        session_id: str,
        origin: str,
        what: str | None,
        kind: str | None = None,
        earlier: bool = False,
    ) -> SessionState:
        """The session read something of ``origin`` (a web page: untrusted); ``earlier``:
        in a turn before the current one (its stretch only)."""
        with self._change:
            old = self.get(session_id)
            base = old or SessionState()
            turn = base.turn if earlier else least_trusted(base.turn, origin)
            lowered = turn != base.turn or least_trusted(base.stretch, origin) != base.stretch
            new = replace(
                base,
                turn=turn,
                stretch=least_trusted(base.stretch, origin),
                kind=kind or base.kind,
                what=_what(what) if lowered and what else base.what,
                updated_at=self.now(),
            )
            return self._put(session_id, new, old, touch=origin not in (CLEAN, "agent"))

    def seen(self, session_id: str, kind: str | None = None) -> SessionState:
        """An observer saw the session (a tool call of nothing outside): it is known."""
        with self._change:
            old = self.get(session_id)
            if old is not None and (kind is None or kind == old.kind):
                return old
            base = old or SessionState()
            return self._put(
                session_id, replace(base, kind=kind or base.kind, updated_at=self.now()), old
            )

    def flushed(self, session_id: str) -> None:
        """A flush of the session wrote its notes: the next one starts a new stretch."""
        with self._change:
            old = self.get(session_id)
            if old is not None and old.stretch != CLEAN:
                self._put(session_id, replace(old, stretch=CLEAN, updated_at=self.now()), old)

    def arm_save(self, session_id: str, read: str) -> SessionState:
        """A Stop-hook save was asked for (``flush.agent``): until the user's next message
        the session's writes also take the stretch it covers (``read``: what the
        transcript's lines of it hold, with what the observers saw)."""
        with self._change:
            old = self.get(session_id)
            base = old or SessionState()
            save = least_trusted(base.stretch, read)
            new = replace(base, save=save, stretch=CLEAN, updated_at=self.now())
            return self._put(session_id, new, old)

    def for_write(
        self,
        declared: Provenance,
        via: str,
        call_id: str | None,
        floor: str | None = None,
        workspace: Path | None = None,
    ) -> tuple[Provenance, SessionState | None]:
        """What a write is recorded with: the least trusted of what its caller declares,
        ``floor`` (``mcp.append_origin``) and what its session read. The session is the one
        that announced ``call_id`` (exact: the agent said so before the call), else the
        declared one; its transcript, when known or found (``workspace``'s first), is read
        up to now first. Also the session's state (None: unknown). Blocking (file reads)."""
        session = (self.session_of_call(call_id) if call_id else None) or declared.session_id
        origin = declared.origin if floor is None else least_trusted(declared.origin, floor)
        if session:
            self.catch_up(session, workspace, call_id)
        state = self.get(session) if session else None
        if state is not None:
            origin = least_trusted(origin, state.floor(via))
        kind = declared.session_kind or (state.kind if state is not None else None)
        return Provenance(origin, session, kind), state

    def observe_transcript(self, session_id: str, path: Path) -> SessionState:
        """Read what the transcript gained since it was last read here (at most the last
        MAX_WATCH_BYTES; a transcript seen the first time from there), as its observers
        would have reported it: a tool call that brought outside content in (classify_read:
        a tool for the web, a shell command with a network client or a URL, a file from
        outside the workspaces and the session's working directory) lowers the session, its
        turn when that is the current one; the user's message starts the turn over when it
        is later than everything the state holds (``_spoke_after``). Raises OSError when
        it cannot be read (or is not a regular file)."""
        at = self.now()
        w, lines = self._new_lines(session_id, path)
        seen: list[str] = []
        w.turns.rule = self._rule(seen)
        lowered = spoke = False
        for raw in lines:
            was = w.turns.tainted
            spoke = w.turns.origin(raw) == "owner" or spoke
            lowered = lowered or (w.turns.tainted and not was)
        self._remember(session_id, path, w)
        with self._change:
            old = self.get(session_id)
            base = old or SessionState()
            if spoke and (old is None or _spoke_after(w.turns.user_at, old.updated_at)):
                base = replace(base, turn=CLEAN, save=None)
            if lowered:
                turn = least_trusted(base.turn, "untrusted") if w.turns.tainted else base.turn
                what = f"{seen[-1]} (in {path.name})" if seen else path.name
                base = replace(
                    base,
                    turn=turn,
                    stretch=least_trusted(base.stretch, "untrusted"),
                    what=_what(what),
                )
            return self._put(session_id, replace(base, updated_at=at), old)

    def _new_lines(self, session_id: str, path: Path) -> tuple[_Watched, list[bytes]]:
        """The whole lines the transcript gained since it was last read here for the
        session, and where that reading stands (the offset already moved past them)."""
        key = (session_id, str(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO never blocks
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{path} is not a regular file")
            with self._lock:
                w = self._watched.get(key)
            fresh = w is None or w.ino != st.st_ino or st.st_size < w.offset
            if fresh or w is None:
                w = _Watched(st.st_ino, max(0, st.st_size - MAX_WATCH_BYTES), Turns())
            skip_first = fresh and w.offset > 0
            if st.st_size - w.offset > MAX_WATCH_BYTES:  # grew by more: its end only
                w.offset, skip_first = st.st_size - MAX_WATCH_BYTES, True
            f.seek(w.offset)
            data = f.read(st.st_size - w.offset)
        end = data.rfind(b"\n") + 1
        lines = data[:end].split(b"\n")[:-1]
        w.offset += end
        return w, lines[1:] if skip_first else lines  # the first cut in the middle

    def _remember(self, session_id: str, path: Path, w: _Watched) -> None:
        with self._lock:
            self._watched[(session_id, str(path))] = w
            while len(self._watched) > MAX_WATCHED:
                self._watched.pop(next(iter(self._watched)))
            self._transcripts.pop(session_id, None)
            self._transcripts[session_id] = path
            while len(self._transcripts) > MAX_WATCHED:
                self._transcripts.popitem(last=False)

    def _rule(self, seen: list[str]) -> CallRule:
        """The hooks' rule (classify_read) for a transcript's tool calls, the workspaces and
        the line's working directory inside; what it found goes to ``seen``."""
        roots = self.places.roots() if self.places is not None else ()

        def outside(tool: str, command: str | None, path: str | None, cwd: str | None) -> bool:
            here = roots + ((Path(cwd),) if cwd and os.path.isabs(cwd) else ())
            if classify_read(tool, command, path, here) is None:
                return False
            seen.append(" ".join(x for x in (tool, command or path) if x))
            return True

        return outside

    def transcript_of(self, session_id: str) -> Path | None:
        """The transcript the session was last observed through, if any."""
        with self._lock:
            return self._transcripts.get(session_id)

    def catch_up(
        self, session_id: str, workspace: Path | None = None, call_id: str | None = None
    ) -> None:
        """Before a write of the session: read what its transcript gained, the one it was
        observed through or else one ``places`` finds (``workspace``'s first). With the
        write's ``call_id``: until the transcript shows that call, for CALL_WAIT at most (the
        agent may write it after calling), and a session whose transcript was not found in a
        wait before is not waited for again. A transcript that cannot be read leaves the
        state as the observers made it."""
        for poll in range(CALL_POLLS + 1):
            path = self._transcript(session_id, workspace)
            if path is not None:
                try:
                    self.observe_transcript(session_id, path)
                except OSError as exc:
                    log.warning("transcript_unreadable", session=session_id[:80], error=str(exc))
                    return
            if call_id is None or self.shows_call(session_id, path, call_id):
                return
            if path is None and self._was_unfound(session_id):
                return
            if poll < CALL_POLLS:
                self.sleep(CALL_POLL)
        log.info(
            "transcript_behind",
            session=session_id[:80],
            call_id=(call_id or "")[:80],
            found=path is not None,
            waited=CALL_WAIT,
        )
        if path is None:
            self._set_unfound(session_id)

    def _transcript(self, session_id: str, workspace: Path | None) -> Path | None:
        path = self.transcript_of(session_id)
        if path is None and self.places is not None:
            path = self.places.find(session_id, workspace)
        return path

    def shows_call(self, session_id: str, path: Path | None, call_id: str) -> bool:
        """Whether the transcript's lines read for the session hold the tool call."""
        if path is None:
            return False
        with self._lock:
            w = self._watched.get((session_id, str(path)))
            return w is not None and call_id in w.turns.calls

    def _was_unfound(self, session_id: str) -> bool:
        with self._lock:
            return session_id in self._unfound

    def _set_unfound(self, session_id: str) -> None:
        with self._lock:
            self._unfound[session_id] = None
            while len(self._unfound) > MAX_WATCHED:
                self._unfound.popitem(last=False)

    # -- tool calls ----------------------------------------------------------------------
    def bind_call(self, call_id: str, session_id: str) -> None:
        with self._lock:
            self._calls.pop(call_id, None)
            self._calls[call_id] = session_id
            while len(self._calls) > MAX_CALLS:
                self._calls.popitem(last=False)

    def session_of_call(self, call_id: str) -> str | None:
        with self._lock:
            return self._calls.get(call_id)


def stored_state(state: StateDB, session_id: str) -> SessionState | None:
    """A session's state as the state database has it (a job's read; the daemon's
    SessionTrust writes every change through)."""
    with state.lock:
        rows = state.conn.execute(
            "SELECT turn, stretch, save, kind, what, updated_at FROM session_trust "
            "WHERE session_id = ?",
            (session_id,),
        ).fetchall()
    if not rows:
        return None
    turn, stretch, save, kind, what, at = (_text(v) for v in rows[0])
    return SessionState(turn or CLEAN, stretch or CLEAN, save, kind, what, float(at or 0))


def _spoke_after(stamp: object, updated_at: float) -> bool:
    """Whether a transcript's user message (its ``timestamp``: ISO 8601, or epoch seconds
    or milliseconds) is later than ``updated_at``, the last observation of the session: the
    turn it starts then holds nothing an observer reported. No time: never."""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        if not math.isfinite(stamp):
            return False
        return (stamp / 1000 if stamp > 1e11 else float(stamp)) > updated_at
    if not isinstance(stamp, str):
        return False
    try:
        when = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp() > updated_at


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _what(text: str) -> str:
    """What lowered a session, as kept: one line, secrets redacted, bounded."""
    return redact(" ".join(text.split())[:MAX_WHAT]).text
