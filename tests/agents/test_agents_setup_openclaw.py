"""``memctl setup openclaw``: the workspace registered with a real daemon, the plugin
installed by OpenClaw's CLI (here a stand-in executable that records its arguments and
writes the slot as ``openclaw plugins install`` does: the boundary), openclaw.json merged
keeping foreign keys, ``--dry-run``/``--print`` changing nothing, ``--undo`` giving the slot
back. The real openclaw runs the same setup in integrations/openclaw's end-to-end test."""

from __future__ import annotations

import io
import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import DaemonThread, short_home
from memoryd_client import cli
from memoryd_client.client import MemoryClient

FAKE_OPENCLAW = """#!/usr/bin/env python3
import json, os, sys
from pathlib import Path
Path(os.environ["RECORD"]).write_text(json.dumps(sys.argv[1:]))
cfg = Path(os.environ["OPENCLAW_STATE_DIR"]) / "openclaw.json"
data = json.loads(cfg.read_text()) if cfg.exists() else {}
plugins = data.setdefault("plugins", {})
plugins.setdefault("entries", {})["memoryd"] = {"enabled": True}
plugins.setdefault("slots", {})["memory"] = "memoryd"
cfg.write_text(json.dumps(data))
"""


@pytest.fixture
def daemon() -> Iterator[DaemonThread]:
    with short_home() as home, DaemonThread(home) as d:
        yield d


@pytest.fixture
def oc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh OpenClaw home with a foreign key and an MCP entry for memoryd."""
    home = tmp_path / ".openclaw"
    home.mkdir()
    (home / "openclaw.json").write_text(
        json.dumps(
            {
                "agents": {"defaults": {"model": {"primary": "x/y"}}},
                "mcp": {"servers": {"memoryd": {"command": "memctl", "args": ["mcp"]}}},
            }
        )
    )
    fake = tmp_path / "openclaw"
    fake.write_text(FAKE_OPENCLAW)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(home))
    monkeypatch.setenv("RECORD", str(tmp_path / "argv.json"))
    return home


def run(daemon: DaemonThread, oc: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = ["setup", "openclaw", "--socket", str(daemon.socket_path), *argv]
    args += ["--openclaw-bin", str(oc.parent / "openclaw"), "--plugin", "/src/plugin"]
    code = cli.main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def config(oc: Path) -> dict[str, object]:
    data = json.loads((oc / "openclaw.json").read_text())
    assert isinstance(data, dict)
    return data


def test_setup_registers_the_workspace_installs_the_plugin_and_merges_the_config(
    daemon: DaemonThread, oc: Path
) -> None:
    code, out, err = run(daemon, oc)
    assert code == 0, err
    workspace = oc / "workspace"
    assert workspace.is_dir()  # OpenClaw creates it on its first run; setup does too
    with MemoryClient(daemon.socket_path) as c:
        assert [(w.name, Path(w.path)) for w in c.workspace_list()] == [
            ("openclaw", workspace.resolve())
        ]
        # registered as OpenClaw's: its home's session stores are copied (index.sessions on)
        ws = c.call("status", {"workspace": "openclaw"})["workspaces"][0]
        assert ws["openclaw"]["home"] == str(oc)
    argv = json.loads((oc.parent / "argv.json").read_text())
    assert argv == ["plugins", "install", "/src/plugin", "--force", "--accept-capabilities"]
    data = config(oc)
    assert data["agents"] == {"defaults": {"model": {"primary": "x/y"}}}  # foreign, kept
    plugins = data["plugins"]
    assert isinstance(plugins, dict)
    assert plugins["slots"] == {"memory": "memoryd"}
    assert plugins["entries"]["memory-core"] == {"enabled": False}
    assert plugins["entries"]["memoryd"] == {
        "enabled": True,
        "hooks": {"allowConversationAccess": True},
        "config": {"socket": str(daemon.socket_path)},
    }
    server = data["mcp"]["servers"]["memoryd"]  # type: ignore[index]
    assert server["env"] == {"MEMORYD_SOCKET": str(daemon.socket_path)}
    assert "restart the gateway" in out

    # A second run registers nothing new and changes nothing.
    before = (oc / "openclaw.json").read_text()
    code, out, err = run(daemon, oc)
    assert code == 0, err and "already set up" in out
    assert json.loads((oc / "openclaw.json").read_text()) == json.loads(before)


def test_dry_run_and_print_show_every_change_and_make_none(daemon: DaemonThread, oc: Path) -> None:
    before = (oc / "openclaw.json").read_text()
    code, out, err = run(daemon, oc, "--dry-run")
    assert code == 0, err
    assert "create the OpenClaw workspace folder" in out
    assert "register " in out and "as workspace 'openclaw'" in out
    assert f"the workspace is OpenClaw's (home {oc})" in out
    assert "plugins install /src/plugin --force --accept-capabilities" in out
    assert '+      "memory": "memoryd"' in out and '"allowConversationAccess": true' in out
    code, printed, err = run(daemon, oc, "--print")
    assert code == 0, err
    fragment = json.loads(printed[printed.index("{") :])
    assert fragment["plugins"]["slots"] == {"memory": "memoryd"}
    assert fragment["mcp"]["servers"]["memoryd"]["env"]["MEMORYD_SOCKET"]
    assert (oc / "openclaw.json").read_text() == before
    assert not (oc / "workspace").exists() and not (oc.parent / "argv.json").exists()
    with MemoryClient(daemon.socket_path) as c:
        assert c.workspace_list() == []


def test_undo_gives_the_slot_back_to_memory_core(daemon: DaemonThread, oc: Path) -> None:
    assert run(daemon, oc)[0] == 0
    code, out, err = run(daemon, oc, "--undo", "--dry-run")
    assert code == 0 and '+      "memory": "memory-core"' in out, err
    code, out, err = run(daemon, oc, "--undo")
    assert code == 0, err
    plugins = config(oc)["plugins"]
    assert isinstance(plugins, dict)
    assert plugins["slots"] == {"memory": "memory-core"}
    assert plugins["entries"]["memoryd"]["enabled"] is False
    assert plugins["entries"]["memory-core"]["enabled"] is True
    with MemoryClient(daemon.socket_path) as c:  # the notes' index stays
        assert [w.name for w in c.workspace_list()] == ["openclaw"]


def test_a_config_that_is_not_json_is_left_alone_with_a_clear_error(
    daemon: DaemonThread, oc: Path
) -> None:
    (oc / "openclaw.json").write_text("{ agents: { /* json5 */ } }")
    code, _, err = run(daemon, oc)
    assert code == 1 and "is not valid JSON" in err
    assert (oc / "openclaw.json").read_text() == "{ agents: { /* json5 */ } }"
