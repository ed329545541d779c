"""Which transcripts ``flush`` may read: the agents' own transcript folders, the
workspace's ``sessions/``, and the folders the configuration adds.

The daemon can read every file of its user; a flush names any path. Without this rule a
caller could have any readable file (another user's workspace transcript, a key file that
happens to be JSON lines) summarised into a workspace's notes. The path is judged by what
it really is (links resolved), once when ``flush`` is asked and again when the run opens it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from memoryd.errors import ForbiddenPath
from memoryd.files.layout import transcripts_dir
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
