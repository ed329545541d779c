"""``memctl setup``: Claude Code's settings merged (foreign keys kept, idempotent, a dry run
changes nothing), the other clients' snippets in their documented shapes, the skill."""

from __future__ import annotations

import io
import json
import tomllib
from pathlib import Path

import pytest

from memoryd_client import cli
from memoryd_client.agents.setup import HOOK_MATCHERS, skill_text

FOREIGN_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "date"}]}],
    },
}
LINT = {"type": "command", "command": "lint"}
FOREIGN_MCP = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}


@pytest.fixture(autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own: setup writes ~/.claude.json (never the real one)."""
    path = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(path))
    return path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_project_setup_merges_keeping_foreign_keys_and_a_second_run_is_a_no_op(
    tmp_path: Path,
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(FOREIGN_SETTINGS))
    (tmp_path / ".mcp.json").write_text(json.dumps(FOREIGN_MCP))

    code, out, err = run(
        "setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon", "--shared"
    )
    assert code == 0, err
    assert out.count(": updated") == 3  # .mcp.json, settings.json, settings.local.json
    assert "approve memoryd" in out  # a shared .mcp.json server waits for each person's yes
    mcp = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert mcp["github"] == FOREIGN_MCP["mcpServers"]["github"]
    assert mcp["memoryd"]["args"] == ["mcp"]
    data = json.loads(settings.read_text())
    assert data["permissions"] == FOREIGN_SETTINGS["permissions"]
    # Theirs kept; ours a group of its own, for memoryd's tools only (the call's session).
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == FOREIGN_SETTINGS["hooks"]["PreToolUse"][0]
    assert pre[1]["matcher"] == HOOK_MATCHERS["PreToolUse"]
    assert pre[1]["hooks"][0]["command"].endswith("hook claude-code pre-tool-use")
    [post] = data["hooks"]["PostToolUse"]  # what tools bring into the session
    assert "WebFetch" in post["matcher"] and post["matcher"].startswith("^(?!mcp__memoryd__)")
    prompt = data["hooks"]["UserPromptSubmit"]
    assert prompt[0] == FOREIGN_SETTINGS["hooks"]["UserPromptSubmit"][0]
    assert prompt[1]["hooks"][0]["command"].endswith("hook claude-code user-prompt-submit")
    for event, arg in (
        ("SessionStart", "session-start"),
        ("PreCompact", "pre-compact"),
        ("SessionEnd", "session-end"),
    ):
        [group] = data["hooks"][event]
        assert group["hooks"][0]["command"].endswith(f"hook claude-code {arg}")

    files = {p: p.read_bytes() for p in (settings, tmp_path / ".mcp.json")}
    code, out, _ = run(
        "setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon", "--shared"
    )
    assert code == 0 and out.count("already set up") == 3
    assert {p: p.read_bytes() for p in files} == files


def test_a_rerun_gives_an_older_setups_pre_tool_use_group_the_file_tools(
    tmp_path: Path,
) -> None:
    """Setup before the memory-file guard matched memoryd's tools only: a rerun updates the
    matcher of the group that holds only our hook (the file tools are guarded from then)."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    code, _, err = run("setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon")
    assert code == 0, err
    data = json.loads(settings.read_text())
    [ours] = data["hooks"]["PreToolUse"]
    assert "Write|Edit|MultiEdit|NotebookEdit" in ours["matcher"]
    ours["matcher"] = "^mcp__memoryd__"  # what an older setup wrote
    settings.write_text(json.dumps(data))
    code, _, err = run("setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon")
    assert code == 0, err
    [ours] = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert ours["matcher"] == HOOK_MATCHERS["PreToolUse"]
    # Our hook in a group of someone else's keeps that group's matcher (theirs to say).
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"][0] = {"matcher": "Bash", "hooks": [ours["hooks"][0], LINT]}
    settings.write_text(json.dumps(data))
    code, _, err = run("setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon")
    assert code == 0, err
    [group] = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert group["matcher"] == "Bash" and group["hooks"][1] == LINT


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    code, out, _ = run(
        "setup", "claude-code", "--project", str(tmp_path), "--dry-run", "--flush", "daemon"
    )
    assert code == 0
    assert "+++ " in out and '"memoryd"' in out and "hook claude-code session-end" in out
    assert not (tmp_path / ".mcp.json").exists()
    assert not (tmp_path / ".claude").exists()


def test_undo_where_setup_has_none_is_refused_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for client in ("claude-code", "skill", "cursor"):
        code, _, err = run("setup", client, "--project", str(tmp_path), "--undo")
        assert code == 2 and "has no --undo" in err, (client, err)
    assert not (tmp_path / ".claude").exists() and not (tmp_path / "home").exists()


def test_user_setup_writes_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".claude.json").write_text(json.dumps({"numStartups": 7, **FOREIGN_MCP}))
    code, _, err = run("setup", "claude-code", "--user", "--flush", "daemon")
    assert code == 0, err
    state = json.loads((tmp_path / ".claude.json").read_text())
    assert state["numStartups"] == 7 and set(state["mcpServers"]) == {"github", "memoryd"}
    assert "SessionEnd" in json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]


def test_a_settings_file_that_is_not_json_is_left_alone_with_a_clear_error(
    tmp_path: Path,
) -> None:
    (tmp_path / ".mcp.json").write_text("{ not json")
    code, _, err = run("setup", "claude-code", "--project", str(tmp_path), "--shared")
    assert code == 1 and "is not valid JSON" in err and err.count("\n") == 1
    assert (tmp_path / ".mcp.json").read_text() == "{ not json"


def test_printed_snippets_have_each_clients_documented_shape() -> None:
    def printed(client: str, *more: str) -> str:
        code, out, err = run("setup", client, "--print", *more)
        assert code == 0, err
        return "\n".join(line for line in out.splitlines() if not line.startswith("#"))

    assert json.loads(printed("cursor"))["mcpServers"]["memoryd"]["args"] == ["mcp"]
    codex_text = printed("codex")
    codex = tomllib.loads(codex_text[: codex_text.index("{")])  # then hooks.json
    assert codex["mcp_servers"]["memoryd"]["args"] == ["mcp"]
    desktop = json.loads(printed("claude-desktop"))["mcpServers"]["memoryd"]
    assert Path(desktop["command"]).is_absolute()
    openclaw_mcp = json.loads(printed("openclaw", "--mcp"))["mcp"]["servers"]["memoryd"]
    assert openclaw_mcp["args"] == ["mcp"] and openclaw_mcp["env"]["MEMORYD_SOCKET"]
    assert run("setup", "cursor")[0] == 2  # writing is for claude-code only: --print


def test_the_skill_is_shipped_in_agent_skills_format() -> None:
    code, out, _ = run("setup", "skill", "--print")
    assert code == 0 and out == skill_text()
    front, body = out.split("---\n")[1:3]
    fields = dict(line.split(": ", 1) for line in front.strip().splitlines())
    assert fields["name"] == "memoryd-memory" and len(fields["description"]) < 1024
    for command in ("memctl search --json", "memctl get --json", "memctl append --json"):
        assert command in body


# ---------------------------------------------------------------- issue 28


def test_setup_writes_the_workspace_into_the_hooks_and_the_mcp_entry(tmp_path: Path) -> None:
    code, _, err = run(
        "setup", "claude-code", "--project", str(tmp_path), "-w", "alice", "--shared"
    )
    assert code == 0, err
    mcp = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["memoryd"]
    assert mcp["args"] == ["mcp", "-w", "alice"]
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    for groups in hooks.values():
        assert groups[0]["hooks"][0]["command"].endswith(" -w alice")
    # Run again without -w: the same hooks, rewritten in place, not added twice.
    run("setup", "claude-code", "--project", str(tmp_path))
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    assert all(len(groups) == 1 for groups in hooks.values())
    assert not any("-w" in g[0]["hooks"][0]["command"] for g in hooks.values())


def test_without_an_llm_setup_installs_a_stop_hook_instead_of_the_daemon_flush(
    tmp_path: Path, md_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from daemon_util import DaemonThread

    monkeypatch.setenv("MEMORYD_HOME", str(md_home))
    settings = tmp_path / ".claude" / "settings.json"
    with DaemonThread(md_home):  # no [llm]
        code, out, err = run("setup", "claude-code", "--project", str(tmp_path))
    assert code == 0, err
    assert "Stop hook" in out
    hooks = json.loads(settings.read_text())["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "SessionStart", "Stop", "PostToolUse", "PreToolUse"}
    assert hooks["Stop"][0]["hooks"][0]["command"].endswith("hook claude-code stop")
    # Chosen the other way later: the Stop hook goes, the daemon's flush hooks come.
    run("setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon")
    hooks = json.loads(settings.read_text())["hooks"]
    assert set(hooks) == {
        "UserPromptSubmit",
        "SessionStart",
        "PreCompact",
        "SessionEnd",
        "PostToolUse",
        "PreToolUse",
    }


def test_setup_skill_writes_the_skill_in_a_fresh_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run("setup", "skill", "--user")
    assert code == 0, err
    skill = tmp_path / ".claude" / "skills" / "memoryd-memory" / "SKILL.md"
    assert skill.read_text() == skill_text()
    code, _, _ = run("setup", "skill", "--project", str(tmp_path / "app"))
    assert code == 0
    assert (tmp_path / "app" / ".claude" / "skills" / "memoryd-memory" / "SKILL.md").is_file()


# ---------------------------------------------------------------- issue 35


def test_project_setup_is_local_to_the_user_and_allows_the_read_only_tools(
    tmp_path: Path, home: Path
) -> None:
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": {"/x": {}}}))
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps(FOREIGN_SETTINGS))
    code, out, err = run("setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon")
    assert code == 0, err
    assert not (tmp_path / ".mcp.json").exists()  # a project server would wait for approval
    state = json.loads((home / ".claude.json").read_text())
    assert state["numStartups"] == 3 and state["projects"]["/x"] == {}
    entry = state["projects"][str(tmp_path)]["mcpServers"]["memoryd"]
    assert entry["args"] == ["mcp"] and entry["type"] == "stdio"
    assert entry["alwaysLoad"] is True  # not behind tool search: searched before answering
    # claude -p honours the user's own settings.local.json, not the project's settings.json
    data = json.loads(local.read_text())
    assert data["hooks"] == FOREIGN_SETTINGS["hooks"]
    assert data["permissions"]["allow"] == [
        "Bash(npm test)",  # the user's, kept first
        "mcp__memoryd__memory_search",
        "mcp__memoryd__memory_get",
        "mcp__memoryd__memory_status",
        "mcp__memoryd__memory_review",
    ]  # writes (append, forget, export, import) stay the user's choice
    assert "permissions" not in json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert "approve" not in out
    code, out, _ = run("setup", "claude-code", "--project", str(tmp_path), "--flush", "daemon")
    assert code == 0 and out.count("already set up") == 3
    user = run("setup", "claude-code", "--user", "--flush", "daemon")
    assert user[0] == 0, user[2]
    home_settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "mcp__memoryd__memory_search" in home_settings["permissions"]["allow"]


def test_codex_setup_merges_server_and_hooks_keeping_foreign_ones_and_undoes(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = home / ".codex"
    codex.mkdir()
    config = 'model = "o3"\n\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
    (codex / "config.toml").write_text(config)
    (codex / "hooks.json").write_text(json.dumps(FOREIGN_SETTINGS))
    before = {p.name: p.read_bytes() for p in codex.iterdir()}
    code, out, err = run("setup", "codex", "-w", "proj", "--flush", "daemon", "--dry-run")
    assert code == 0 and "+[mcp_servers.memoryd]" in out and "hook codex user-prompt-submit" in out
    assert {p.name: p.read_bytes() for p in codex.iterdir()} == before
    code, out, err = run("setup", "codex", "-w", "proj", "--flush", "daemon")
    assert code == 0, err
    assert "/hooks" in out  # Codex runs a new hook only once trusted: said
    data = tomllib.loads((codex / "config.toml").read_text())
    assert data["model"] == "o3" and data["mcp_servers"]["github"] == {"command": "gh-mcp"}
    server = data["mcp_servers"]["memoryd"]
    assert server["args"] == ["mcp", "-w", "proj"] and server["env"]["MEMORYD_SOCKET"]
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert hooks["PreToolUse"][0] == FOREIGN_SETTINGS["hooks"]["PreToolUse"][0]
    commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
    for event in ("user-prompt-submit", "session-start", "pre-compact", "session-end"):
        assert any(c.endswith(f"hook codex {event} -w proj") for c in commands), event
    assert not any(" stop" in c for c in commands if "codex" in c)  # daemon flush: no Stop
    code, out, _ = run("setup", "codex", "-w", "proj", "--flush", "daemon")
    assert code == 0 and out.count("already set up") == 2
    code, out, err = run("setup", "codex", "--undo")
    assert code == 0, err
    assert tomllib.loads((codex / "config.toml").read_text()) == tomllib.loads(config)
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert not any(
        "memctl" in h["command"] or "hook codex" in h["command"]
        for groups in hooks.values()
        for g in groups
        for h in g["hooks"]
    )
    printed = run("setup", "codex", "--print")[1]
    assert "[mcp_servers.memoryd]" in printed and "hook codex user-prompt-submit" in printed
