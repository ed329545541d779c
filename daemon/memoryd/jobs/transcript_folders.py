"""Which transcripts ``flush`` may read: the agents' own transcript folders, the
workspace's ``sessions/``, and the folders the configuration adds.

The daemon can read every file of its user; a flush names any path. Without this rule a
caller could have any readable file (another user's workspace transcript, a key file that
happens to be JSON lines) summarised into a workspace's notes. The path is judged by what
it really is (links resolved), once when ``flush`` is asked and again when the run opens it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final

from memoryd.errors import ForbiddenPath
from memoryd.files.layout import transcript_dirs, transcripts_dir
from memoryd.runtime.config import AgentsConfig

# Claude Code keeps a project's sessions in ~/.claude/projects/<project>/<session>.jsonl;
# OpenClaw keeps its agents' sessions under ~/.openclaw; Codex its rollouts under
# ~/.codex/sessions/YYYY/MM/DD/ (or $CODEX_HOME/sessions).
AGENT_FOLDERS = ("~/.claude/projects", "~/.openclaw", "~/.codex/sessions")


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def allowed_folders(root: Path, cfg: AgentsConfig, env: Mapping[str, str]) -> list[Path]:
    """The folders transcripts may be read from, for the workspace at ``root``."""
    home = _home(env)
    named = [*AGENT_FOLDERS, *cfg.transcript_folders]
    if env.get("CODEX_HOME"):
        named.append(os.path.join(env["CODEX_HOME"], "sessions"))
    out = [Path(home, f[2:]) if f.startswith("~/") else Path(f) for f in named]
    return [*out, transcripts_dir(root)]


def check_transcript(
    transcript: Path, root: Path, cfg: AgentsConfig, env: Mapping[str, str]
) -> None:
    """ForbiddenPath unless ``transcript`` (links resolved) lies in an allowed folder."""
    real = os.path.realpath(transcript)
    folders = allowed_folders(root, cfg, env)
    for folder in folders:
        base = os.path.realpath(folder)
        if real.startswith(base.rstrip(os.sep) + os.sep):
            return
    shown = ", ".join(str(f) for f in folders)
    raise ForbiddenPath(
        f"transcript {transcript} is not in an agent's transcript folder ({shown}); "
        "add its folder to agents.transcript_folders in the configuration to flush it"
    )


# A session id that can name a transcript file: no separator, no leading dot.
_SESSION_FILE: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")


class TranscriptPlaces:
    """Where the daemon looks for a session's transcript when a write names the session
    and no observer named its transcript (jobs/session_trust.py): the workspaces'
    ``sessions/<id>.jsonl`` and OpenClaw's copies (``sessions/openclaw/<agent>/<id>.jsonl``),
    and Claude Code's ``~/.claude/projects/<project>/<id>.jsonl`` (the MCP server knows
    its session from ``CLAUDE_CODE_SESSION_ID``). Codex names its rollouts by time
    (``rollout-<time>-<id>.jsonl`` in dated folders): they are read when a hook names them."""

    def __init__(self, env: Mapping[str, str], workspaces: Callable[[], Iterable[Path]]) -> None:
        self.home = Path(_home(env))
        self.workspaces = workspaces

    def roots(self) -> tuple[Path, ...]:
        """The workspaces' folders (resolved): reading a file in one brings nothing in."""
        out = []
        for root in self.workspaces():
            try:
                out.append(root.resolve())
            except (OSError, RuntimeError):
                continue
        return tuple(out)

    def find(self, session_id: str, prefer: Path | None = None) -> Path | None:
        """The transcript of ``session_id`` (a regular file), looked for in workspace
        ``prefer`` first; None when no place holds one."""
        if not _SESSION_FILE.fullmatch(session_id):
            return None
        name = f"{session_id}.jsonl"
        roots = [prefer] if prefer is not None else []
        roots += [r for r in self.workspaces() if r != prefer]
        folders = []
        for root in roots:
            try:
                folders += transcript_dirs(root)
            except OSError:  # OpenClaw's copies unreadable: sessions/ still counts
                folders.append(transcripts_dir(root))
        claude = self.home / ".claude" / "projects"
        try:
            with os.scandir(claude) as it:
                folders += [Path(e.path) for e in it if e.is_dir(follow_symlinks=False)]
        except OSError:
            pass  # no Claude Code here
        for folder in folders:
            candidate = folder / name
            try:
                if stat.S_ISREG(candidate.stat().st_mode):
                    return candidate
            except OSError:
                continue
        return None
