"""``autostart=True``: start ``memoryd run`` in the background when no daemon answers.

For machines without a service manager. The daemon is detached (its own session, stdin
from /dev/null, output appended to ``<log dir>/memoryd-autostart.log``) so it outlives the
client; its single-instance lock makes two clients racing to start it harmless.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from memoryd_client.errors import AutostartFailed
from memoryd_client.paths import default_paths

#: How long a client waits for an autostarted daemon's socket to accept.
AUTOSTART_WAIT_S = 5.0
#: Between two connection attempts while waiting.
POLL_INTERVAL_S = 0.05
LOG_NAME = "memoryd-autostart.log"

# Keep the handles so the Popen objects are not collected (and warned about) while we run.
_children: list[subprocess.Popen[bytes]] = []


def find_memoryd() -> str | None:
    """The ``memoryd`` executable: next to this Python first (same venv), then on PATH."""
    beside = Path(sys.executable).parent / "memoryd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("memoryd")


class Starter:
    """One autostart attempt: spawn, then tell whether the child died meanwhile."""

    def __init__(self, socket: str | os.PathLike[str], explicit_socket: bool) -> None:
        exe = find_memoryd()
        if exe is None:
            raise AutostartFailed(
                "cannot autostart memoryd: no `memoryd` executable next to "
                f"{sys.executable} or on PATH (install memoryd, or start the daemon yourself)"
            )
        log_dir = default_paths().log_dir
        try:
            log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.log_path = log_dir / LOG_NAME
            log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise AutostartFailed(
                f"cannot autostart memoryd: cannot open a log file: {exc}"
            ) from None
        cmd = [exe, "run"]
        if explicit_socket:
            cmd += ["--socket", str(socket)]
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise AutostartFailed(f"cannot autostart memoryd ({exe}): {exc}") from None
        finally:
            os.close(log)
        _children.append(self.proc)

    def failure(self) -> AutostartFailed | None:
        """The error to raise if the child has exited (it may have lost a start race)."""
        code = self.proc.poll()
        if code is None:
            return None
        return AutostartFailed(
            f"memoryd exited with code {code} while starting; see {self.log_path}"
        )

    def timed_out(self) -> AutostartFailed:
        return AutostartFailed(
            f"memoryd did not accept connections within {AUTOSTART_WAIT_S:g}s of starting; "
            f"see {self.log_path}"
        )
