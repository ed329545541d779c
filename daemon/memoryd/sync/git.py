"""The ``git`` command line, run for one repository of memoryd's own (or the workspace's).

Every call names the repository explicitly (``GIT_DIR``, ``GIT_WORK_TREE``): git never
discovers a repository of the person's from the folder it runs in. The person's global
config stays in force (their credential helpers, ``core.sshCommand``, proxies: credentials
are git's own, never memoryd's), but what would change our bytes or wait for a person is
overridden on the command line: line-ending conversion, hooks, signing, prompts, pagers,
automatic gc in the background.

On Linux each git child gets ``PR_SET_PDEATHSIG`` (from util-linux's ``setpriv`` where it
is there, so that no git costs a fork of the daemon): killed with the daemon (kill -9), it
leaves no orphan still writing into the repository while the next start cleans its lock
files (repo.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from memoryd.errors import Unavailable

__all__ = ["Git", "GitError", "GitMissing", "Identity"]

LOCAL_TIMEOUT_S: Final = 120.0
NETWORK_TIMEOUT_S: Final = 300.0
_OVERRIDES: Final = (
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.eol=lf",
    "core.quotePath=false",
    "core.fileMode=false",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",
    "gc.autoDetach=false",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    "init.defaultBranch=main",
    "protocol.version=2",
)
# Messages git prints when the remote cannot be reached (the repository may be fine).
_OFFLINE_HINTS: Final = (
    "could not resolve host",
    "could not read from remote repository",
    "connection refused",
    "connection timed out",
    "network is unreachable",
    "unable to access",
    "failed to connect",
    "no route to host",
    "timed out",
    "does not appear to be a git repository",
    "unable to connect",
    "the remote end hung up",
    "early eof",
)


class GitMissing(Unavailable):
    pass


class GitError(Unavailable):
    """A git command failed; ``offline`` when it could not reach the remote."""

    def __init__(self, message: str, stderr: str = "", offline: bool = False) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.offline = offline


@dataclass(frozen=True)
class Identity:
    """Who commits, and when: the daemon's clock (tests pass a fake one)."""

    name: str
    email: str
    when: Callable[[], float]

    def env(self) -> dict[str, str]:
        stamp = f"@{int(self.when())} +0000"
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }


@dataclass(frozen=True)
class _Death:
    """How a git child is made to die with the daemon (Linux's ``PR_SET_PDEATHSIG``)."""

    prefix: tuple[str, ...] = ()  # a command git runs under
    preexec: Callable[[], None] | None = None


@functools.cache
def _death(git: str) -> _Death:
    """util-linux's ``setpriv --pdeathsig KILL`` sets it and then execs git: Python starts
    it with vfork. A preexec function (the fallback: no setpriv, or one older than
    util-linux 2.33) makes Python fork the whole daemon instead, copying its page tables:
    ~7 ms more a git at 60 MB resident, ~20 ms at 200 MB, and a sync runs dozens.
    Asked once, at the first git (never at import)."""
    if not sys.platform.startswith("linux"):
        return _Death()
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        prefix = (setpriv, "--pdeathsig", "KILL", "--")
        try:
            tried = subprocess.run(
                [*prefix, git, "--version"],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=LOCAL_TIMEOUT_S,
                check=False,
            )
            if tried.returncode == 0:
                return _Death(prefix=prefix)
        except (OSError, subprocess.SubprocessError):
            pass
    name = ctypes.util.find_library("c")
    if name is None:
        return _Death()
    prctl = ctypes.CDLL(name, use_errno=True).prctl  # looked up once, in the parent

    def preexec() -> None:
        prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL

    return _Death(preexec=preexec)


class Git:
    """One repository: ``git_dir`` (and ``work_tree``, the workspace, when there is one)."""

    def __init__(
        self,
        git_dir: Path,
        work_tree: Path | None,
        identity: Identity,
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        """``env``: the daemon's environment (default os.environ); ``extra``: variables
        of ours on top (GIT_INDEX_FILE: an index of memoryd's own)."""
        exe = shutil.which("git")
        if exe is None:
            raise GitMissing("git is not installed (sync runs the git command line)")
        self.exe = exe
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.identity = identity
        self.base_env = dict(os.environ if env is None else env)
        base = dict(self.base_env)
        for name in [n for n in base if n.startswith("GIT_") and n not in _KEPT_ENV]:
            del base[name]  # GIT_DIR, GIT_INDEX_FILE... of whoever started the daemon
        self._env = {
            **base,
            "GIT_DIR": str(git_dir),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "LC_ALL": "C",
            "LANGUAGE": "",
        }
        if work_tree is not None:
            self._env["GIT_WORK_TREE"] = str(work_tree)
        self._env.update(extra or {})
        # ssh must never wait for a passphrase on a terminal the daemon does not have.
        self._env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")

    def command(self, *args: str) -> list[str]:
        """``git ARGS`` with memoryd's overrides, for a process run by hand (a pipe): under
        setpriv where it makes the child die with the daemon (``run`` adds the fallback)."""
        cmd = [*_death(self.exe).prefix, self.exe]
        for item in _OVERRIDES:
            cmd += ["-c", item]
        return [*cmd, *args]

    def environment(self) -> dict[str, str]:
        """The environment every git of this repository runs with."""
        return {**self._env, **self.identity.env()}

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        network: bool = False,
        ok: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``git ARGS``; GitError unless its exit code is in ``ok``."""
        cmd = self.command(*args)
        full_env = {**self.environment(), **(env or {})}
        try:
            proc = subprocess.run(
                cmd,
                input=input,
                capture_output=True,
                env=full_env,
                cwd=str(cwd or self.work_tree or self.git_dir),
                timeout=NETWORK_TIMEOUT_S if network else LOCAL_TIMEOUT_S,
                check=False,
                stdin=None if input is not None else subprocess.DEVNULL,
                preexec_fn=_death(self.exe).preexec,
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} timed out", offline=network) from None
        except OSError as exc:
            raise GitError(f"git {args[0]}: {exc}") from None
        if proc.returncode not in ok:
            err = proc.stderr.decode("utf-8", "replace")
            detail = " ".join(err.split())[:400] or f"exit code {proc.returncode}"
            low = err.lower()
            offline = network and any(h in low for h in _OFFLINE_HINTS)
            raise GitError(f"git {args[0]} failed: {detail}", err, offline)
        return proc

    def out(
        self,
        *args: str,
        input: bytes | None = None,
        network: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """The command's standard output as text, stripped."""
        proc = self.run(*args, input=input, network=network, env=env)
        return proc.stdout.decode("utf-8", "surrogateescape").strip()


# The variables a person sets to reach a remote: kept. The rest of GIT_* is dropped.
_KEPT_ENV: Final = frozenset(
    {
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_ASKPASS",
        "GIT_PROXY_COMMAND",
        "GIT_SSL_NO_VERIFY",
        "GIT_SSL_CAINFO",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_TRACE",
    }
)
