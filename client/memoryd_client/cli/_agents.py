"""The memctl commands for agents: ``mcp``, ``recall``, ``flush``, ``hook`` and ``setup``.

Registered by :func:`add_commands` from memctl's parser; each handler imports the agent
module it drives (:mod:`memoryd_client.agents`) when it runs, so ``memctl search`` pays
nothing for them (and only ``memctl mcp`` loads the MCP SDK).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd_client.agents import CLIENTS
from memoryd_client.agents.project import project_key
from memoryd_client.cli._base import (
    EXIT_ERROR,
    EXIT_OK,
    Context,
    UsageError,
    text_argument,
)
from memoryd_client.errors import ClientError

if TYPE_CHECKING:
    from memoryd_client.cli._base import Command

MCP_TOKEN_ENV = "MEMCTL_MCP_TOKEN"


def add_commands(sub: Any, command: Command) -> None:
    """mcp, recall, flush, hook and setup, each with its options."""
    for add in (_add_mcp, _add_recall, _add_flush, _add_hook, _add_setup):
        add(sub, command)


def _add_mcp(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "mcp",
        cmd_mcp,
        "serve the memory to agents over the Model Context Protocol (stdio, or --http)",
        example="  memctl mcp                      # stdio, what agents spawn\n"
        "  memctl mcp --http 8765          # http://127.0.0.1:8765/mcp",
    )
    p.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(HOST defaults to 127.0.0.1); every request needs the bearer token",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"the token 'Authorization: Bearer TOKEN' must carry (default: ${MCP_TOKEN_ENV}, "
        "else the one in the state folder's mcp-token, made on first use: memctl setup "
        "--http writes it into the clients it configures)",
    )
    p.add_argument(
        "--no-token",
        action="store_true",
        help="loopback only: no token (any local user or program can then read and write "
        "the memory)",
    )
    p.add_argument(
        "--all-workspaces",
        action="store_true",
        help="with --workspace: still serve calls naming another registered workspace "
        "(without it, -w confines the server to that workspace)",
    )


def _add_recall(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "recall",
        cmd_recall,
        "the memory worth putting before a model for this prompt (empty when none)",
        example='  memctl recall "who owns the billing service?"\n'
        '  echo "$PROMPT" | memctl recall - --budget 300 --json',
    )
    p.add_argument("text", nargs="+", metavar="TEXT", help="the prompt, or - to read stdin")
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="TOKENS",
        help="at most this many tokens (~4 characters each; default 600)",
    )
    p.add_argument(
        "--min-score", type=float, metavar="SCORE", help="0..1 (default 0.5, stricter than search)"
    )
    p.add_argument(
        "--project",
        action="append",
        metavar="KEY",
        help="an active project (repeatable; default: the working directory's repository)",
    )
    p.add_argument(
        "--include-superseded",
        action="store_true",
        help="also lines a newer line with the same <!-- key: --> superseded",
    )


def _add_flush(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "flush",
        cmd_flush,
        "hand an agent's transcript to the daemon's LLM: its durable facts go to today's "
        "daily file (from where the last flush of the session stopped)",
        example="  memctl flush ~/.claude/projects/app/2f1c.jsonl          # queued\n"
        "  memctl flush sessions/s1.jsonl --session-id s1 --wait --json   # from the workspace",
    )
    p.add_argument("transcript", metavar="TRANSCRIPT", help="OpenClaw or Claude Code JSONL")
    p.add_argument(
        "--session-id",
        metavar="ID",
        help="whose flushes resume from where the last one stopped (default: the "
        "transcript's file name without .jsonl, as Claude Code and OpenClaw name them)",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait for the run and print its outcome (exit 1 if it failed)",
    )


def _add_hook(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "hook",
        cmd_hook,
        "answer an agent's hook: memctl hook claude-code EVENT (event JSON on stdin); "
        "always exits 0",
        example="  memctl hook claude-code user-prompt-submit < event.json\n"
        "  memctl hook claude-code stop -w alice < event.json",
    )
    # No argparse choices: a usage error would exit 2, which Claude Code takes as "block".
    p.add_argument("agent", metavar="AGENT", help="claude-code")
    p.add_argument(
        "event",
        metavar="EVENT",
        help="user-prompt-submit, session-start, pre-compact, session-end or stop",
    )


def _add_setup(sub: Any, command: Command) -> None:
    p = command(
        sub,
        "setup",
        cmd_setup,
        "connect an agent to memoryd: write Claude Code's settings (or the skill), or "
        "--print a client's snippet (cursor, codex, claude-desktop, openclaw, skill)",
        example="  memctl setup claude-code --dry-run   # this project; --user for all\n"
        "  memctl setup claude-code -w alice    # hooks and MCP for workspace alice\n"
        "  memctl setup skill --user            # ~/.claude/skills/memoryd-memory/SKILL.md\n"
        "  memctl setup cursor --print",
    )
    p.add_argument("client", metavar="CLIENT", choices=CLIENTS, help=", ".join(CLIENTS))
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        metavar="DIR",
        help="claude-code: this project (the default, with the current directory): "
        ".claude/settings.json, and the MCP server for this project in ~/.claude.json",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help="claude-code: ~/.claude.json and ~/.claude/settings.json (every project)",
    )
    p.add_argument(
        "--shared",
        action="store_true",
        help="claude-code: the MCP server in the project's .mcp.json, for everyone who checks "
        "it out (each must approve it in Claude Code); default: in ~/.claude.json for this "
        "project and you only, nothing to approve",
    )
    p.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    p.add_argument("--print", action="store_true", help="print the snippet to paste")
    p.add_argument(
        "--undo",
        action="store_true",
        help="openclaw: give the memory slot back to memory-core (the plugin stays installed); "
        "codex: take out memoryd's server and hooks; hermes: back to its built-in memory",
    )
    p.add_argument(
        "--plugin",
        metavar="SPEC",
        help="openclaw: the plugin to install, a folder or an npm spec (default: the one "
        "this memoryd-client ships)",
    )
    p.add_argument("--openclaw-bin", metavar="PATH", help="openclaw: its executable")
    p.add_argument("--hermes-bin", metavar="PATH", help="hermes: its executable")
    p.add_argument(
        "--mcp",
        action="store_true",
        help="openclaw: print the MCP server snippet instead (memoryd beside memory-core)",
    )
    p.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="claude-code, cursor: connect to memctl mcp --http at that address instead of "
        "spawning memctl mcp (the entry carries the bearer token: the state folder's "
        "mcp-token, or --token)",
    )
    p.add_argument("--token", metavar="TOKEN", help="with --http: the token (see memctl mcp)")
    p.add_argument(
        "--flush",
        choices=("auto", "agent", "daemon"),
        default="auto",
        help="claude-code: who writes a session's notes: the daemon's LLM at compaction and "
        "exit (daemon), or Claude itself when a Stop hook asks (agent: no LLM needed, one "
        "extra model turn now and then); auto (default): daemon when [llm] is configured",
    )


def parse_listen(value: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` -> (host, port)."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise ClientError(f"--http: not a port: {port_text!r}") from None
    if not 0 < port < 65536:
        raise ClientError(f"--http: port must be 1..65535: {port}")
    return host, port


def cmd_mcp(args: argparse.Namespace, ctx: Context) -> int:
    import asyncio

    from memoryd_client._async import AsyncMemoryClient
    from memoryd_client.agents import mcp_server
    from memoryd_client.agents.bridge import Bridge

    if args.http:
        try:
            import uvicorn  # noqa: F401  (checked before serving, used by serve_http)
        except ImportError:
            raise ClientError(
                "memctl mcp --http needs uvicorn: pip install 'memoryd-client[mcp]'"
            ) from None

    token = args.token or os.environ.get(MCP_TOKEN_ENV) or None
    listen = parse_listen(args.http) if args.http else None
    where = "given"
    if listen is not None and token is None:
        if not args.no_token:
            from memoryd_client.agents import mcp_token

            token, path = mcp_token.load_or_create()
            where = f"in {path}"
        elif not mcp_server.is_loopback(listen[0]):
            raise UsageError(
                f"--http {args.http} --no-token: serving beyond loopback needs a token; "
                "anyone who can reach the port could read the memory"
            )

    async def run() -> None:
        client = AsyncMemoryClient(
            args.socket,
            timeout=args.timeout,
            client_name="memctl-mcp",
            autostart=not os.environ.get("MEMCTL_NO_AUTOSTART"),  # on the first call only
        )
        bridge = Bridge(
            client,
            workspace=args.workspace,
            notices=ctx.stderr,
            confined=not args.all_workspaces,
        )
        try:
            if listen is None:
                await mcp_server.serve_stdio(bridge)
            else:
                print(
                    f"memctl mcp: serving http://{listen[0]}:{listen[1]}/mcp"
                    + (
                        f" (bearer token required: {where})"
                        if token
                        else " (no token: any local user or program can call it)"
                    ),
                    file=ctx.stderr,
                    flush=True,
                )
                await mcp_server.serve_http(bridge, listen[0], listen[1], token)
        finally:
            await client.close()

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person stops it
        asyncio.run(run())
    return EXIT_OK


def cmd_recall(args: argparse.Namespace, ctx: Context) -> int:
    text = text_argument(args.text, "nothing to recall for: the text is empty")
    result = ctx.client.recall(
        text,
        workspace=ctx.workspace(),
        budget_tokens=args.budget,
        min_score=args.min_score,
        project=args.project or project_key(Path.cwd()),
        include_superseded=args.include_superseded,
    )
    if args.json:
        ctx.print_json(result.raw)
    elif result.markdown:
        ctx.stdout.write(result.markdown)
    return EXIT_OK


def cmd_flush(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from memoryd_client.cli._format import format_run

    transcript = Path(args.transcript).expanduser()
    if transcript.suffix == ".sqlite" and not args.session_id:
        # OpenClaw's store holds every session of an agent: the file names none of them
        raise UsageError(f"{transcript.name} holds many sessions: name one with --session-id")
    session_id = args.session_id or transcript.name.removesuffix(".jsonl")
    if not session_id.strip():
        raise UsageError("--session-id is empty")
    result = ctx.client.flush(
        transcript, session_id, workspace=ctx.workspace(), wait=args.wait, trigger="manual"
    )
    if args.json:
        ctx.print_json(result.raw)
    elif result.run is not None:
        for line in format_run(result.run):
            ctx.print(line)
    else:
        ctx.print(f"flush of {transcript} queued for workspace {result.workspace}")
    return EXIT_ERROR if result.run is not None and result.run.status == "failed" else EXIT_OK


def cmd_hook(args: argparse.Namespace, ctx: Context) -> int:
    from memoryd_client.agents.hooks import TIMEOUT_S, run_hook

    timeout = min(args.timeout, TIMEOUT_S)  # the agent waits on us
    return run_hook(
        args.agent,
        args.event,
        sys.stdin,
        ctx.stdout,
        socket=args.socket,
        timeout=timeout,
        workspace=args.workspace,
    )


def cmd_setup(args: argparse.Namespace, ctx: Context) -> int:
    from pathlib import Path

    from memoryd_client.agents import setup

    if args.client == "openclaw" and not args.mcp:
        return cmd_setup_openclaw(args, ctx)
    project = None if args.user else Path(args.project or os.getcwd()).resolve()
    if args.client == "codex" and not args.print:
        return cmd_setup_codex(args, ctx)
    if args.client == "hermes":
        return cmd_setup_hermes(args, ctx)
    if args.undo:  # taken by the parser for every client: never a setup run instead
        raise UsageError(
            f"memctl setup {args.client} has no --undo (openclaw, codex and hermes do): "
            f"`memctl setup {args.client} --dry-run` shows what setup writes, to take out by hand"
        )
    http = _http_target(args)
    try:
        if args.print or args.client not in ("claude-code", "skill"):
            if not args.print:
                raise UsageError(f"memctl setup {args.client} only prints its snippet: add --print")
            from memoryd_client.agents.snippets import snippet

            ctx.stdout.write(snippet(args.client, http))
            return EXIT_OK
        if args.client == "skill":
            changes = [setup.skill_change(project=project, home=Path.home())]
        else:
            flush = args.flush if args.flush != "auto" else _flush_mode(ctx)
            changes = setup.claude_code_changes(
                project=project,
                home=Path.home(),
                command=setup.memctl_command(),
                workspace=args.workspace,
                flush=flush,
                shared=args.shared,
                http=setup.http_entry(*http) if http is not None else None,
            )
    except setup.SetupError as exc:
        raise ClientError(str(exc)) from None
    for change in changes:
        if not change.changed:
            ctx.print(f"{change.path}: already set up")
        elif args.dry_run:
            ctx.stdout.write(change.diff())
        else:
            setup.write(change)
            ctx.print(f"{change.path}: updated")
    if not args.dry_run and any(c.changed for c in changes):
        ctx.print("restart Claude Code (or run /mcp and /hooks) to load it")
    if args.client == "claude-code" and args.shared and project is not None:
        ctx.print(
            "Claude Code asks each person to approve a project's .mcp.json server: run "
            "`claude` here once and approve memoryd (until then `claude mcp list` shows it "
            "pending approval, and `claude -p` runs without it)"
        )
    return EXIT_OK


def _http_target(args: argparse.Namespace) -> tuple[str, str] | None:
    """(url, token) of ``memctl mcp --http`` for ``setup --http``; the token made on first
    use, as the server makes it (mcp_token.py)."""
    if not args.http:
        return None
    host, port = parse_listen(args.http)
    token = args.token or os.environ.get(MCP_TOKEN_ENV)
    if not token:
        from memoryd_client.agents import mcp_token

        token, _ = mcp_token.load_or_create()
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp", token


def cmd_setup_codex(args: argparse.Namespace, ctx: Context) -> int:
    """Codex's config.toml and hooks.json: the MCP server and memctl's hooks (or --undo)."""
    from pathlib import Path

    from memoryd_client.agents import codex_setup
    from memoryd_client.agents.openclaw_setup import mcp_env
    from memoryd_client.agents.setup import SetupError, memctl_command, write

    env = dict(os.environ)
    flush = "daemon" if args.undo else args.flush if args.flush != "auto" else _flush_mode(ctx)
    try:
        changes = codex_setup.changes(
            home=codex_setup.codex_home(env),
            project=Path(args.project).resolve() if args.project else None,
            command=memctl_command(),
            workspace=args.workspace,
            flush=flush,
            env=mcp_env(ctx.client.socket_path, env),
            undo=args.undo,
        )
    except SetupError as exc:
        raise ClientError(str(exc)) from None
    for change in changes:
        if not change.changed:
            ctx.print(f"{change.path}: already {'without memoryd' if args.undo else 'set up'}")
        elif args.dry_run:
            ctx.stdout.write(change.diff("after undo" if args.undo else "after setup"))
        else:
            write(change)
            ctx.print(f"{change.path}: updated")
    if not args.undo and not args.dry_run:
        ctx.print(codex_setup.TRUST_NOTE)
        if args.project:
            ctx.print("Codex loads a project's .codex/ only in a trusted project (codex --trust)")
    return EXIT_OK


def cmd_setup_hermes(args: argparse.Namespace, ctx: Context) -> int:
    """Hermes' memory folder registered, the provider plugin written and activated."""
    from memoryd_client.agents import hermes_setup
    from memoryd_client.agents.setup import SetupError

    env = dict(os.environ)
    try:
        p = hermes_setup.plan(
            env=env,
            socket=ctx.client.socket_path,
            workspace=args.workspace,
            hermes_bin=args.hermes_bin,
            undo=args.undo,
        )
    except SetupError as exc:
        raise ClientError(str(exc)) from None
    if args.print:
        ctx.stdout.write(hermes_setup.print_snippet(p))
        return EXIT_OK
    if args.dry_run:
        after = "after undo" if args.undo else "after setup"
        ctx.stdout.write(p.describe(args.undo) + "".join(c.diff(after) for c in p.files))
        return EXIT_OK
    try:
        if p.register is not None:
            p.register.mkdir(parents=True, exist_ok=True)
            added = ctx.client.workspace_add(p.register, hermes_setup.WORKSPACE_NAME)
            ctx.print(f"memoryd: workspace {added.name} = {added.path}")
        for line in hermes_setup.apply(p, env, args.undo):
            ctx.print(line)
    except SetupError as exc:
        raise ClientError(str(exc)) from None
    ctx.print(
        "Hermes is back on its built-in memory"
        if args.undo
        else "memoryd is Hermes' memory provider (hermes memory status shows it)"
    )
    return EXIT_OK


def cmd_setup_openclaw(args: argparse.Namespace, ctx: Context) -> int:
    """Register the workspace, install the plugin, merge openclaw.json (or --undo it)."""
    from pathlib import Path

    from memoryd_client.agents import openclaw_setup as oc
    from memoryd_client.agents.setup import SetupError, write

    env = dict(os.environ)
    known = None
    if not args.undo:
        try:
            known = [Path(w.path) for w in ctx.client.workspace_list()]
        except ClientError as exc:
            if not (args.dry_run or args.print):
                raise ClientError(f"{exc} (memoryd must run to register the workspace)") from None
    try:
        p = oc.plan(
            env=env,
            socket=ctx.client.socket_path,
            known_workspaces=known,
            plugin=args.plugin,
            openclaw_bin=args.openclaw_bin,
            undo=args.undo,
        )
    except SetupError as exc:
        raise ClientError(str(exc)) from None
    if args.print:
        ctx.stdout.write(oc.print_snippet(p))
        return EXIT_OK
    if args.dry_run:
        after = "after undo" if args.undo else "after setup"
        ctx.stdout.write(p.describe() + (p.change.diff(after) if p.change.changed else ""))
        return EXIT_OK
    try:
        if p.create_workspace:
            p.workspace.mkdir(parents=True, exist_ok=True)
        if p.register:
            added = ctx.client.workspace_add(p.workspace, oc.WORKSPACE_NAME, openclaw_home=p.home)
            ctx.print(f"memoryd: workspace {added.name} = {added.path}")
        elif p.home is not None:  # known already: marked as OpenClaw's (idempotent)
            ctx.client.workspace_add(p.known_root or p.workspace, openclaw_home=p.home)
        if args.undo:
            if p.change.changed:
                write(p.change)
            ctx.print(f"{p.change.path}: " + ("updated" if p.change.changed else "already so"))
        else:
            oc.apply(p, ctx.client.socket_path, env, ctx.print)
    except SetupError as exc:
        raise ClientError(str(exc)) from None
    ctx.print(
        "memory-core is back in the memory slot: restart the gateway"
        if args.undo
        else "memoryd is OpenClaw's memory: restart the gateway (openclaw gateway restart)"
    )
    return EXIT_OK


def _flush_mode(ctx: Context) -> str:
    """``--flush auto``: the daemon's flush when it has an LLM, else the agent's (Stop)."""
    from memoryd_client.client import MemoryClient

    try:
        autostart = not os.environ.get("MEMCTL_NO_AUTOSTART")
        with MemoryClient(ctx.args.socket, timeout=10.0, autostart=autostart) as client:
            configured = bool(client.jobs_list().llm.get("configured"))
    except ClientError as exc:
        ctx.print(f"cannot ask memoryd whether an LLM is configured ({exc}): flush by the agent")
        return "agent"
    mode = "daemon" if configured else "agent"
    ctx.print(
        "flush: by memoryd's LLM at compaction and exit"
        if configured
        else "flush: no LLM configured ([llm]); a Stop hook asks Claude to save the notes"
    )
    return mode
