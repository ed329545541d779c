"""Secrets kept out of memory: redacted before the disk and the LLM, masked in answers
(search, recall, get, MCP), shown by ``get --raw``, never logged."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import DaemonThread, memctl
from fakes.openai_server import FakeOpenAIServer
from jobs_util import llm_daemon
from log_sink import log_to_the_tests_stderr
from mcp_util import daemon_with, make_workspace, stdio_session, text_of
from memoryd import secrets
from memoryd.runtime.logs import configure_logging, get_logger
from memoryd.secrets import mask, redact
from memoryd_client import MemoryClient

pytestmark = pytest.mark.timeout(60)

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
AWS = "AKIA" + "IOSFODNN7EXAMPL3"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nq2w3e4r5t6\n-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"- the deploy token is {GITHUB} for CI", GITHUB, "github_token"),
        (f"- aws key {AWS} in the vault", AWS, "aws_access_key"),
        (f"- billing uses {STRIPE}", STRIPE, "stripe_access_key"),
        (f"- session cookie: {JWT}", JWT, "json_web_token"),
        ("- db: postgres://admin:hunter2verysecret@db.example.com/prod", "hunter2verysecret", ""),
        ("- the wifi password is Tr0ub4dor&3 now", "Tr0ub4dor&3", "secret_keyword"),
        ('- api_key = "zq81Xc02LmNp77Qr"', "zq81Xc02LmNp77Qr", "secret_keyword"),
        ("- header Authorization: Bearer abcDEF123456ghiJKL789", "abcDEF123456ghiJKL789", ""),
        ("- a random one wJalrXUtnFEMI/K7MDENG/bPxRfiCY3XAMPLEKEY", "wJalrXUtnFEMI", ""),
        (f"the key:\n{PEM}\nafter it", "MIIEpAIBAAKCAQEA7", "private_key"),
    ],
)
def test_a_secret_is_replaced_by_its_kind(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out.text and out.found
    assert f"[REDACTED:{kind}" in out.text
    assert out.text.count("[REDACTED:") == len(out.kinds)


@pytest.mark.parametrize(
    "text",
    [
        "- Caroline went to the LGBTQ support group on 7 May 2023 and felt inspired.",
        "- the commit is 3f786850e387550fdab836ed7e6dc881de23001b in the repo",
        "- my secret is that I like pineapple pizza",
        "- the token was Expired yesterday; the password: forgotten",
        "- see daemon/memoryd/files/provenance.py and https://github.com/owner/repo",
        "- the session 123e4567-e89b-12d3-a456-426614174000 ended",
        "- keyboard shortcuts: ctrl+k opens the palette, the monkey key is F12",
        "",
    ],
)
def test_prose_hashes_paths_and_ids_are_left_alone(text: str) -> None:
    assert redact(text).text == text and not redact(text).found


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact(f"token: {GITHUB} and password: Tr0ub4dor&3xyzzy").text
    assert redact(once).text == once and mask(once) == once


def test_logs_mask_a_secret_quoted_in_any_field() -> None:
    out = io.StringIO()
    configure_logging("info", json=True, stream=out)
    try:
        get_logger("test").warning("odd_input", text=f"the deploy token is {GITHUB}")
    finally:
        log_to_the_tests_stderr()
    line = json.loads(out.getvalue().splitlines()[-1])
    assert GITHUB not in out.getvalue() and "[REDACTED:github_token]" in line["text"]


# ------------------------------------------------------------------ through the daemon


@pytest.fixture
def workspace(md_home: Path) -> Path:
    ws = md_home / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(
        f"# Memory\n\n- The staging deploy token is {GITHUB} (rotate monthly).\n"
    )
    return ws


@pytest.fixture
def daemon(
    md_home: Path, workspace: Path, openai_server: FakeOpenAIServer
) -> Iterator[DaemonThread]:
    with llm_daemon(md_home, workspace, "alice", openai_server.base_url) as d:
        yield d


def test_append_writes_the_redacted_text_and_says_what_it_replaced(
    daemon: DaemonThread, workspace: Path
) -> None:
    with MemoryClient(daemon.socket_path) as c:
        res = c.append(f"- Billing key for tests: {STRIPE}", workspace="alice", date="2025-03-12")
    text = (workspace / "memory" / "2025-03-12.md").read_text()
    assert STRIPE not in text and "[REDACTED:stripe_access_key]" in text
    assert res.redacted == ["stripe_access_key"]


def test_a_hand_written_secret_stays_in_the_file_but_answers_mask_it(
    daemon: DaemonThread, workspace: Path
) -> None:
    with MemoryClient(daemon.socket_path) as c:
        hits = c.search("staging deploy token", workspace="alice", mode="keyword").results
        recalled = c.recall("what is the staging deploy token?", workspace="alice", min_score=0)
        got = c.get("MEMORY.md", workspace="alice")
        raw = c.get("MEMORY.md", workspace="alice", raw=True)
    assert hits and all(GITHUB not in h.snippet for h in hits)
    assert any("[REDACTED:github_token]" in h.snippet for h in hits)
    assert recalled.results and GITHUB not in recalled.markdown
    assert GITHUB not in got.text and got.masked == 1
    assert GITHUB in raw.text and raw.masked == 0
    assert GITHUB in (workspace / "MEMORY.md").read_text()  # the file is the person's


def test_memctl_get_masks_and_get_raw_shows_the_file(daemon: DaemonThread) -> None:
    code, out, _ = memctl(daemon, "get", "MEMORY.md", "-w", "alice")
    assert code == 0 and GITHUB not in out and "[REDACTED:github_token]" in out
    code, out, _ = memctl(daemon, "get", "MEMORY.md", "-w", "alice", "--raw")
    assert code == 0 and GITHUB in out


def test_flush_sends_no_secret_to_the_model_and_writes_none(
    daemon: DaemonThread, workspace: Path, md_home: Path, openai_server: FakeOpenAIServer
) -> None:
    t = workspace / "sessions" / "s.jsonl"  # flush reads only the agents' transcript folders
    t.parent.mkdir(exist_ok=True)
    t.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "s-1",
                "message": {"role": "user", "content": f"Use {AWS} for the uploads bucket."},
            }
        )
        + "\n"
    )
    openai_server.respond_chat(f"- Uploads bucket uses the key {AWS}.")
    with MemoryClient(daemon.socket_path) as c:
        out = c.flush(t, "s-1", workspace="alice", wait=True)
    assert out.run is not None and out.run.raw["status"] == "ok", out.run
    prompt = openai_server.requests_to("chat")[-1].body["messages"][-1]["content"]
    assert AWS not in prompt and "[REDACTED:aws_access_key]" in prompt
    daily = (workspace / "memory" / "2025-03-12.md").read_text()
    assert AWS not in daily and "[REDACTED:aws_access_key]" in daily


def test_mcp_search_and_get_show_a_hand_written_secret_masked(md_home: Path) -> None:
    # The MCP server (memctl mcp) answers from the daemon's answers: masked there, for every
    # client (the OpenClaw plugin too).
    ws = make_workspace(md_home)
    (ws / "memory" / "2025-03-02.md").write_text(f"- The release signing token is {GITHUB}.\n")

    async def main() -> None:
        async with stdio_session(md_home, ws) as s:
            found = await s.call_tool("memory_search", {"query": "release signing token"})
            assert not found.isError and found.structuredContent is not None
            assert found.structuredContent["results"]
            assert GITHUB not in text_of(found) and GITHUB not in json.dumps(
                found.structuredContent
            )
            got = await s.call_tool("memory_get", {"path": "memory/2025-03-02.md"})
            assert GITHUB not in text_of(got) and "[REDACTED:github_token]" in text_of(got)

    with daemon_with(md_home, ws):
        asyncio.run(main())


@pytest.mark.parametrize(
    ("line", "matched"),
    [
        ("my password: hunter2-Kx9!q", True),
        ("PASSWORD=Zq8vR2mK4tL", True),
        ("pa\u017f\u017fword: Zq8vR2mK4tL", False),  # long s: "ss" to the rule, not a hint
        ("my pa\u017f\u017fword_key: Zq8vR2mK4tL", False),  # ... nor a word character
        ("PR\u0130VATE_KEY=Zq8vR2mK4tLw9", False),  # dotted I: lower() makes two characters
        ("the api_\u212aey is Zq8vR2mK4tLw9x", True),  # the Kelvin sign: "k"
        ("contrase\u00d1a = Zq8vR2mK4tL", True),
        ("db_pass=Zq8vR2mK4tLw9 and a token: Aa1Bb2Cc3Dd4", True),
        ("She is passionate about painting; the monkey has the key.", False),
    ],
)
def test_the_keyword_words_test_never_refuses_a_line_the_rule_matches(
    line: str, matched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # _keyword_values tries the rule only on a line that writes a keyword out: what it
    # finds must be what trying the rule at every hint's word start finds
    low = line.lower()
    found = [m.span() for m in secrets._keyword_values(line, low)]
    monkeypatch.setattr(secrets, "_KEYWORD_WORDS", ("",))  # "" is in every line
    assert found == [m.span() for m in secrets._keyword_values(line, low)]
    assert bool(found) is matched


def test_a_line_with_hints_and_no_keyword_compiles_no_rule() -> None:
    secrets._compiled.cache_clear()
    line = "passionate monkeys by the keyboard"
    assert secrets._keyword_values(line, line.lower()) == []
    assert secrets._compiled.cache_info().currsize == 0


def test_warm_compiles_each_rule_as_the_text_that_needs_it_asks_for_it() -> None:
    """secrets.warm (after the first answer, off the loop) leaves no rule for the first
    text that needs one to compile: a rule asked for as warm did not ask (another cache
    key) would be compiled again there."""
    secrets._compiled.cache_clear()
    secrets.warm()
    warmed = secrets._compiled.cache_info().currsize
    text = (
        "api_key = Zq8vR2mK4tLw9xYb\nBearer abcdefghijklmnopqrstuvwxyz0123\n"
        "run Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0KkLlMmNn\n"
        "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----\n"
    )
    assert redact(text).text != text
    assert secrets._compiled.cache_info().currsize == warmed == 4
