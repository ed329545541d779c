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
import json, os, shutil, sys
from pathlib import Path
record = Path(os.environ["RECORD"])
calls = json.loads(record.read_text()) if record.exists() else []
record.write_text(json.dumps(calls + [sys.argv[1:]]))
home = Path(os.environ["OPENCLAW_STATE_DIR"])
cfg = home / "openclaw.json"
data = json.loads(cfg.read_text()) if cfg.exists() else {}
plugins = data.setdefault("plugins", {})
installed = home / "extensions" / "memoryd"
verb = sys.argv[2]
if verb == "install":  # copies the folder, as openclaw does
    shutil.rmtree(installed, ignore_errors=True)
    if Path(sys.argv[3]).is_dir():
        shutil.copytree(sys.argv[3], installed)
    plugins.setdefault("entries", {})["memoryd"] = {"enabled": True}
    plugins.setdefault("slots", {})["memory"] = "memoryd"
elif verb == "uninstall":
    shutil.rmtree(installed, ignore_errors=True)
    plugins.get("entries", {}).pop("memoryd", None)
elif verb == "inspect":
    broken = os.environ.get("FAKE_BROKEN")
    print("[plugins] loading")  # log lines may come before the JSON
    print(json.dumps({
        "plugin": {"id": "memoryd", "status": "error" if broken else "loaded",
                   "error": broken, "toolNames": [] if broken else ["memory_search", "memory_get"]},
        "diagnostics": [{"level": "warn", "pluginId": "memoryd", "message": "a warning"}],
    }))
    sys.exit(0)
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


def run(
    daemon: DaemonThread, oc: Path, *argv: str, plugin: str | None = "/src/plugin"
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = ["setup", "openclaw", "--socket", str(daemon.socket_path), *argv]
    args += ["--openclaw-bin", str(oc.parent / "openclaw")]
    args += ["--plugin", plugin] if plugin else []
    code = cli.main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def calls(oc: Path) -> list[list[str]]:
    record = oc.parent / "argv.json"
    return json.loads(record.read_text()) if record.exists() else []


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
    assert calls(oc) == [
        ["plugins", "install", "/src/plugin", "--force", "--accept-capabilities"],
        ["plugins", "inspect", "memoryd", "--runtime", "--json"],  # OpenClaw loads it
    ]
    assert "OpenClaw loads the memoryd plugin" in out and "openclaw: a warning" in out
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


# ---------------------------------------------------------------- issue 35


def test_the_plugin_shipped_in_the_client_installs_once_with_its_codec_and_no_checkout_files(
    daemon: DaemonThread, oc: Path
) -> None:
    code, out, err = run(daemon, oc, plugin=None)  # no --plugin: the client's own copy
    assert code == 0, err
    [install, inspect] = calls(oc)
    assert install[:2] == ["plugins", "install"] and inspect[1] == "inspect"
    installed = oc / "extensions" / "memoryd"
    shipped = {p.relative_to(installed).as_posix() for p in installed.rglob("*") if p.is_file()}
    assert {"index.js", "openclaw.plugin.json", "package.json", "src/plugin.js"} <= shipped
    assert "vendor/msgpack/index.mjs" in shipped  # the codec, vendored: no npm install
    assert not any(p.startswith(("test/", "node_modules/")) for p in shipped)
    assert "package-lock.json" not in shipped
    assert json.loads((installed / "package.json").read_text()).get("dependencies", {}) == {}

    # The same files installed already: no second install (it takes OpenClaw ~30 s), the
    # load still checked.
    code, out, err = run(daemon, oc, plugin=None)
    assert code == 0, err
    assert [c[1] for c in calls(oc)] == ["install", "inspect", "inspect"]
    assert "already installed (the same files)" in out
    code, out, err = run(daemon, oc, "--dry-run", plugin=None)
    assert code == 0 and "the installed plugin is the same" in out, err
    # A changed file installs again.
    (installed / "src" / "plugin.js").write_text("// edited\n")
    assert run(daemon, oc, plugin=None)[0] == 0
    assert [c[1] for c in calls(oc)] == ["install", "inspect", "inspect", "install", "inspect"]


def test_a_plugin_openclaw_cannot_load_puts_config_and_plugin_folder_back(
    daemon: DaemonThread, oc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(daemon, oc, plugin=None)[0] == 0
    installed = oc / "extensions" / "memoryd"
    before_config = (oc / "openclaw.json").read_bytes()
    (installed / "src" / "plugin.js").write_text("// changed: reinstalled\n")
    before_plugin = {p: p.read_bytes() for p in installed.rglob("*") if p.is_file()}
    monkeypatch.setenv("FAKE_BROKEN", "Plugin dependency @msgpack/msgpack is missing")
    code, _, err = run(daemon, oc, plugin=None)
    assert code == 1
    assert "OpenClaw cannot load the memoryd plugin" in err and "@msgpack/msgpack" in err
    assert "are as they were" in err
    assert (oc / "openclaw.json").read_bytes() == before_config
    assert {p: p.read_bytes() for p in installed.rglob("*") if p.is_file()} == before_plugin


def test_a_first_install_that_fails_is_uninstalled_and_the_config_restored(
    daemon: DaemonThread, oc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = (oc / "openclaw.json").read_bytes()
    monkeypatch.setenv("FAKE_BROKEN", "boom")
    code, _, err = run(daemon, oc, plugin=None)
    assert code == 1 and "boom" in err, err
    assert [c[1] for c in calls(oc)] == ["install", "inspect", "uninstall"]
    assert not (oc / "extensions" / "memoryd").exists()
    assert (oc / "openclaw.json").read_bytes() == before


def test_print_names_memory_core_disabled_and_undo_dry_run_says_undo(
    daemon: DaemonThread, oc: Path
) -> None:
    code, printed, err = run(daemon, oc, "--print")
    assert code == 0, err
    fragment = json.loads(printed[printed.index("{") :])
    # merged by hand without it, memory-core takes memory_search while memoryd recalls
    assert fragment["plugins"]["entries"]["memory-core"] == {"enabled": False}
    assert run(daemon, oc)[0] == 0
    code, out, err = run(daemon, oc, "--undo", "--dry-run")
    assert code == 0, err
    assert "(after undo)" in out and "(after setup)" not in out
