"""What a daemon started by a question has imported when it answers it (issue 38, spawn ->
first answer): none of what only later work needs, and the lines it held come out after.

The modules are read by a sitecustomize in the daemon's own process (on PYTHONPATH, a
watcher at the boundary: it changes nothing the daemon does), written when the first answer
to a request other than hello has been handed to the socket.
"""

from __future__ import annotations

import importlib.util
import os
import signal
from pathlib import Path

import pytest

import memoryd.cli
from daemon_util import Proc, RawConn, wait_for
from memoryd.exit_codes import EXIT_OK
from memoryd.runtime import bytecode

# Not needed for a keyword answer from an existing index: structlog (runtime/logs.py holds
# the lines), sqlite-vec's package (its extension is found beside it: memoryd/sqlite.py),
# the config's parser without a config file, OpenClaw's session copies (and zstd) without
# an OpenClaw workspace, argparse for a plain `memoryd run` (cli.py), the method groups
# and services a search does not call (status's report, recall, the workspaces' methods,
# append and its trust of sessions: rpc/wiring.py, services.py), the journal of a
# workspace that has no change in it, numpy (the in-memory copies load after the answer:
# FTS5 gives their scores; runtime/lazy_numpy.py), tempfile (int8_rows makes a model file),
# random (via the secrets module: a temp file's name is os.urandom's), ctypes.util (macOS's
# peer check), the next-steps line's command names (a terminal's) and ssl (asyncio gets it
# after the answer: runtime/asyncio_ssl.py).
NOT_BEFORE_THE_FIRST_ANSWER = (
    "numpy",
    "structlog",
    "sqlite_vec",
    "sqlite3",
    "tomllib",
    "memoryd.files.openclaw_mirror",
    "zstandard",
    "argparse",
    "memoryd.rpc.status",
    "memoryd.rpc.recall_methods",
    "memoryd.index.search.recall",
    "memoryd.rpc.workspace_methods",
    "memoryd.files.append",
    "memoryd.files.duplicates",
    "memoryd.files.injected",
    "memoryd.jobs.session_trust",
    "memoryd.lifecycle.journal",
    "tempfile",
    "random",
    "secrets",
    "ctypes.util",
    "memoryd_client.command_names",
    "ssl",
    "_ssl",
)

WATCHER = """
import os, sys

def _watch():
    from memoryd.rpc import connection
    from memoryd.rpc.dispatch import Dispatcher
    asked, dispatch, send = [False], Dispatcher.dispatch, connection.Connection.send

    async def watched_dispatch(self, req):
        asked[0] = asked[0] or req.method != "hello"
        return await dispatch(self, req)

    async def watched_send(self, frame, *args, **kwargs):  # whatever send takes besides
        await send(self, frame, *args, **kwargs)
        out = os.environ["FIRST_ANSWER_MODULES"]
        if asked[0] and not os.path.exists(out):
            with open(out + ".tmp", "w") as f:
                f.write("\\n".join(sorted(sys.modules)))
            os.replace(out + ".tmp", out)
        if sys.modules["asyncio.base_events"].ssl is sys.modules.get("ssl", 0):
            open(out + ".ssl", "w").close()  # asyncio was given ssl (after the answer)

    Dispatcher.dispatch, connection.Connection.send = watched_dispatch, watched_send

class _Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "memoryd.app":  # imported by `memoryd run`, before the socket accepts
            sys.meta_path.remove(cls)
            _watch()
        return None

sys.meta_path.insert(0, _Finder)
"""


def _indexed(home: Path) -> None:
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2024-05-01.md").write_text("- The spare key is under the blue pot.\n")
    proc = Proc(home)
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as c:
            c.result("workspace.add", {"path": str(ws)})
            assert wait_for(lambda: c.result("status")["workspaces"][0]["files"] == 1, 30)
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
    finally:
        proc.kill()


def test_a_first_keyword_answer_imports_none_of_what_only_later_work_needs(
    md_home: Path, tmp_path: Path
) -> None:
    _indexed(md_home)
    (tmp_path / "sitecustomize.py").write_text(WATCHER)
    listed = tmp_path / "modules"
    # cli.py is imported before `memoryd run` lets bytecode be written: cached after the
    # answer (runtime/bytecode.py), for the next start
    cli_cached = Path(importlib.util.cache_from_source(memoryd.cli.__file__))
    cli_cached.unlink(missing_ok=True)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    proc = Proc(md_home, env={"PYTHONPATH": path, "FIRST_ANSWER_MODULES": str(listed)})
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as c:
            found = c.result("search", {"query": "spare key", "mode": "keyword"})["results"]
            assert [h["path"] for h in found] == ["memory/2024-05-01.md"]
            # and then the copies load
            scan = lambda: c.result("status")["workspaces"][0]["keyword_scan"]  # noqa: E731
            assert wait_for(lambda: scan() == "memory", 15)
            assert wait_for(lambda: c.result("hello") and (tmp_path / "modules.ssl").exists(), 15)
        assert wait_for(listed.exists, 15)
        modules = set(listed.read_text().split())
        assert "memoryd.index.workspace" in modules  # the engine answered
        assert [m for m in NOT_BEFORE_THE_FIRST_ANSWER if m in modules] == []
        # The lines held until then come out, in the order they were logged.
        assert wait_for(lambda: "startup" in proc.events(), 15), proc.logs()
        events = proc.events()
        assert events.index("workspace_opened") < events.index("startup")
        assert wait_for(lambda: not bytecode._stale(memoryd.cli.__file__, str(cli_cached)), 15)
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
    finally:
        proc.kill()


def _numpy_mapped(pid: int) -> bool:
    """Whether numpy's extension is mapped into process ``pid`` (Linux's /proc)."""
    return "numpy" in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("asked", [False, True])
def test_a_daemon_without_a_workspace_imports_numpy_once_idle_for_its_first_index(
    md_home: Path, asked: bool
) -> None:
    # Its first workspace.add would wait for the import (the index's in-memory copies):
    # once the first answer is out, or a second after the start if none comes.
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2024-05-01.md").write_text("- The spare key is under the blue pot.\n")
    proc = Proc(md_home)
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as c:
            if asked:
                assert c.result("workspace.list") == {"workspaces": []}
            assert wait_for(lambda: _numpy_mapped(proc.p.pid), 30)
            c.result("workspace.add", {"path": str(ws), "wait": True})
            found = c.result("search", {"query": "spare key", "mode": "keyword"})["results"]
            assert [h["path"] for h in found] == ["memory/2024-05-01.md"]
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
    finally:
        proc.kill()


FAILING_IMPORTS = """
import sys
for name in ("memoryd.rpc.status", "memoryd.rpc.workspace_methods"):
    sys.modules[name] = None  # an import of it fails, as a broken install's would
"""


def test_a_method_whose_module_fails_to_import_answers_that_call_and_the_daemon_serves_on(
    md_home: Path, tmp_path: Path
) -> None:
    _indexed(md_home)
    (tmp_path / "sitecustomize.py").write_text(FAILING_IMPORTS)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    proc = Proc(md_home, env={"PYTHONPATH": path})
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as c:
            found = c.result("search", {"query": "spare key", "mode": "keyword"})["results"]
            assert [h["path"] for h in found] == ["memory/2024-05-01.md"]
            for method in ("status", "workspace.list", "status"):  # tried again each time
                c.send({"id": 9, "method": method, "params": {}})
                reply = c.recv()
                assert reply is not None and reply["error"]["code"] == "internal", reply
                said = reply["error"]["message"]
                assert said.startswith(f"internal error in {method}: ModuleNotFoundError: "), said
                assert "import of memoryd.rpc." in said, said
            assert c.result("get", {"path": "memory/2024-05-01.md"})["text"].startswith("- The")
        # The later groups were made once it had answered: that one logged, the rest made.
        assert wait_for(lambda: "method_group_failed" in proc.events(), 15), proc.logs()
        assert "background_ready" in proc.events() or wait_for(
            lambda: "background_ready" in proc.events(), 15
        )
        proc.p.send_signal(signal.SIGTERM)
        assert proc.wait() == EXIT_OK
    finally:
        proc.kill()
