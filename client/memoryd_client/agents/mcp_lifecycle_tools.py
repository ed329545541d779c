"""The MCP tools that change what memory holds as a whole: forget, export, import.

A model that reads a poisoned web page must not be able to make the agent forget on its
own, ship the memory elsewhere, or pull an archive in as the owner's memory
(docs/lifecycle.md, "Who may call what"):

- ``memory_forget`` lists what would go unless ``confirm: true``, is annotated
  destructive (clients ask the user), and never purges the pre-image.
- ``memory_export`` takes no path: the archive goes into the workspace's exports folder
  (``memory/.history/exports``), which holds the same memory already; the answer says
  where, how big, and what is in it. Taking it elsewhere is the person's act.
- ``memory_import`` lists what would merge unless ``confirm: true``. What it merges is
  outside content: daily notes only, every line it adds recorded ``untrusted`` (searchable,
  never recalled into a prompt by itself, never promoted); MEMORY.md/USER.md lines, the
  archive's provenance and its forgotten-session marks are refused and listed. So a model
  can bring in nothing it could not append as untrusted itself; ``memctl import`` is the
  owner's full import. The daemon's limits (size, members outside the workspace, links)
  and secret redaction apply as for memctl.
"""

from __future__ import annotations

from typing import Any, Final

from memoryd_client.agents.bridge import MAX_QUERY_CHARS, Bridge
from memoryd_client.agents.mcp_tool import WORKSPACE, Tool, out, schema

__all__ = ["LIFECYCLE_TOOLS"]

MAX_ARCHIVE_PATH: Final = 4096


async def _forget(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.forget(
        path=a.get("path"),
        lines=a.get("lines"),
        query=a.get("query"),
        session_id=a.get("sessionId"),
        max_results=a.get("maxResults"),
        workspace=a.get("workspace"),
        confirm=a.get("confirm", False),
    )
    return data, forget_text(data)


async def _export(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.export(workspace=a.get("workspace"))
    return data, export_text(data)


async def _import(bridge: Bridge, a: dict[str, Any]) -> tuple[dict[str, Any], str]:
    data = await bridge.import_archive(
        a["archive"], workspace=a.get("workspace"), confirm=a.get("confirm", False)
    )
    return data, import_text(data)


# ---------------------------------------------------------------- text renderings


def forget_text(result: dict[str, Any]) -> str:
    verb = "Would forget" if result["dryRun"] else "Forgot"
    parts = []
    for r in result["removed"]:
        if r["wholeFile"]:
            parts.append(f"{verb} {r['path']} (the whole transcript).")
            continue
        parts.append(f"{verb} {r['path']}:{','.join(r['lines'])}:\n{r['text'].rstrip()}")
    if not parts:
        return "Nothing to forget" + (
            " (the session is marked forgotten)." if result.get("sessionId") else "."
        )
    if result["dryRun"]:
        parts.append(
            "Nothing was removed yet. Show this to the user; call memory_forget again with "
            "the same arguments and confirm: true only if they agree."
        )
    return "\n".join(parts)


def export_text(result: dict[str, Any]) -> str:
    days = (
        f", daily notes {result['firstDay']} to {result['lastDay']}"
        if result.get("firstDay")
        else ""
    )
    return (
        f"Exported {result['files']} file(s){days} to {result['path']} ({result['bytes']} "
        f"bytes, sha256 {result['sha256'][:16]}...). memory_import takes it by its name, "
        f"{result['name']}; copying it elsewhere is the user's to do."
    )


def import_text(result: dict[str, Any]) -> str:
    verb = "Would add" if result["dryRun"] else "Added"
    parts = [
        f"{verb} {result['linesAdded']} line(s) to {len(result['files'])} note(s), as "
        f"untrusted content; {result['linesAlreadyThere']} already there."
    ]
    for f in result["files"]:
        new = " (new)" if f["created"] else ""
        parts.append(f"{f['path']}{new}: +{f['linesAdded']}")
        parts.extend(f"  {line}" for line in f["firstLines"])
    for r in result["refused"]:
        what = f"{r['lines']} line(s)" if "lines" in r else f"{r.get('forgetMarks', 0)} mark(s)"
        parts.append(f"Refused: {r['path']}, {what}: {r['why']}.")
    if result["dryRun"] and result["linesAdded"]:
        parts.append(
            "Nothing was imported yet. Show this to the user; call memory_import again with "
            "the same archive and confirm: true only if they agree."
        )
    return "\n".join(parts)


LIFECYCLE_TOOLS: Final = {
    tool.name: tool
    for tool in (
        Tool(
            "memory_forget",
            "Forget lines of memory",
            "Remove lines from the user's memory for good: a line range of a file (path with "
            "lines), the lines matching a query, or everything of a session. Only when the "
            "USER asks to forget something. Without confirm it changes nothing and lists what "
            "would go: show that list to the user, and call again with confirm: true only "
            "after they agreed. Exactly one of path (with lines), query, sessionId.",
            schema(
                {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "A memory file, e.g. memory/2025-01-31.md (with lines).",
                    },
                    "lines": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 40,
                        "description": "The lines of path to forget: N or A-B, 1-based.",
                    },
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "Forget the lines of the hits of this search.",
                    },
                    "sessionId": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "description": "Forget every line recorded from this session, and its "
                        "transcript; it is never flushed or indexed again.",
                    },
                    "maxResults": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 100,
                        "description": "With query: how many hits (default 6).",
                    },
                    "confirm": {
                        "type": "boolean",
                        "description": "true: remove them (the user agreed to the list a call "
                        "without confirm showed). Default false: only list them.",
                    },
                    "workspace": WORKSPACE,
                }
            ),
            {
                **out(dryRun="boolean", removed="array", lines="integer", files="integer"),
            },
            read_only=False,
            idempotent=False,  # a query may match new lines on a second call
            run=_forget,
            destructive=True,
        ),
        Tool(
            "memory_export",
            "Export memory to an archive",
            "Write the user's memory (MEMORY.md, daily notes, provenance, a manifest with "
            "hashes) to a .tar.gz in the workspace's own exports folder, and say where, how "
            "big, and what it holds. It takes no path: the archive stays beside the memory "
            "it copies (the newest few are kept); moving it elsewhere is the user's act. "
            "Only when the USER asks for an export or a backup.",
            schema({"workspace": WORKSPACE}),
            out(
                path="string",
                name="string",
                files="integer",
                bytes="integer",
                sha256="string",
                unpackedBytes="integer",
                dailyNotes="integer",
                firstDay="string?",
                lastDay="string?",
                curated="array",
            ),
            read_only=False,  # it writes an archive (and prunes the oldest of its own)
            idempotent=False,  # a new archive each call
            run=_export,
        ),
        Tool(
            "memory_import",
            "Import an archive into memory",
            "Merge a memoryd export into the user's memory, adding no line twice. Only when "
            "the USER asks to import an archive. Without confirm it changes nothing and lists "
            "what would merge (new lines, lines already there, what is refused): show that "
            "to the user, and call again with confirm: true only after they agreed. The lines "
            "it adds are kept as untrusted content (searchable, never recalled by "
            "themselves); lines for MEMORY.md or USER.md are refused (the user runs memctl "
            "import for that).",
            schema(
                {
                    "archive": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_ARCHIVE_PATH,
                        "description": "An absolute path to a .tar.gz written by memctl "
                        "export, or the file name memory_export answered (name).",
                    },
                    "confirm": {
                        "type": "boolean",
                        "description": "true: merge it (the user agreed to the list a call "
                        "without confirm showed). Default false: only list it.",
                    },
                    "workspace": WORKSPACE,
                },
                ("archive",),
            ),
            out(
                dryRun="boolean",
                linesAdded="integer",
                linesAlreadyThere="integer",
                files="array",
                refused="array",
            ),
            read_only=False,
            idempotent=False,
            run=_import,
        ),
    )
}
