"""The memctl commands for agents: ``mcp``, ``recall``, ``hook`` and ``setup``.

Registered by :func:`add_commands` from memctl's parser; each handler imports what it
needs when it runs, so ``memctl search`` pays nothing for them (and only ``memctl mcp``
loads the MCP SDK).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

from memoryd_client.errors import ClientError

if TYPE_CHECKING:
    from memoryd_client.cli import Context, Handler

MCP_TOKEN_ENV = "MEMCTL_MCP_TOKEN"


class _Command(Protocol):
    def __call__(
        self, subparsers: Any, name: str, handler: Handler, help: str, *, workspace: bool = True
    ) -> argparse.ArgumentParser: ...


def add_commands(sub: Any, command: _Command) -> None:
    p = command(
        sub,
        "mcp",
        cmd_mcp,
        "serve the memory to agents over the Model Context Protocol (stdio, or --http)",
    )
    p.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(HOST defaults to 127.0.0.1; any other than loopback needs --token)",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"require 'Authorization: Bearer TOKEN' on every HTTP request "
        f"(default: ${MCP_TOKEN_ENV} if set)",
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
    from memoryd_client.cli import EXIT_OK, UsageError

    try:
        from memoryd_client.agents import mcp_server
    except ImportError as exc:
        raise ClientError(
            f"memctl mcp needs the MCP SDK ({exc.name or exc}): "
            "pip install 'memoryd-client[mcp]'"
        ) from None
    import asyncio

    from memoryd_client._async import AsyncMemoryClient
    from memoryd_client.agents.bridge import Bridge

    token = args.token or os.environ.get(MCP_TOKEN_ENV) or None
    listen = parse_listen(args.http) if args.http else None
    if listen is not None and not token and not mcp_server.is_loopback(listen[0]):
        raise UsageError(
            f"--http {args.http}: serving beyond loopback needs --token "
            f"(or ${MCP_TOKEN_ENV}); anyone who can reach the port could read the memory"
        )

    async def run() -> None:
        client = AsyncMemoryClient(args.socket, timeout=args.timeout, client_name="memctl-mcp")
        bridge = Bridge(client, workspace=args.workspace, notices=ctx.stderr)
        try:
            if listen is None:
                await mcp_server.serve_stdio(bridge)
            else:
                print(
                    f"memctl mcp: serving http://{listen[0]}:{listen[1]}/mcp"
                    + (" (bearer token required)" if token else ""),
                    file=ctx.stderr,
                    flush=True,
                )
                await mcp_server.serve_http(bridge, listen[0], listen[1], token)
        finally:
            await client.close()

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person stops it
        asyncio.run(run())
    return EXIT_OK


def _stdin_text() -> str:
    return sys.stdin.read()
