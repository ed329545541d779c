"""What ``memctl mcp`` does for each tool call, without the MCP SDK: forward to the daemon.

One :class:`~memoryd_client.AsyncMemoryClient` (one persistent connection, reconnected by
the client when the daemon restarted) and the workspace the server was started for. The
results are plain dicts with OpenClaw's camelCase keys, plus a short text rendering for
MCP clients that show only text. Failures are :class:`ToolRefusal` with a sentence for the
model; the server turns them into tool errors and keeps running.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from typing import TYPE_CHECKING, Any, Final, TextIO

from memoryd_client.agents.mcp_session import CALL_ID, client_session
from memoryd_client.agents.project import project_key
from memoryd_client.agents.workspace import choices_message, containing, default_for
from memoryd_client.agents.workspace import looks_like_path as _looks_like_path
from memoryd_client.errors import (
    ClientError,
    ConnectionLost,
    DaemonNotRunning,
    ForbiddenPath,
    NotFound,
)
from memoryd_client.types import SearchHit, WorkspaceInfo

if TYPE_CHECKING:
    from memoryd_client._async import AsyncMemoryClient

MAX_QUERY_CHARS = 2000
EXPORTS_FOLDER: Final = "memory/.history/exports"  # the daemon's (lifecycle/exports.py)
"""A longer "query" is a pasted document, not a question: refused with this limit."""
MAX_APPEND_CHARS = 64 * 1024
SOURCES = ("memory", "sessions", "all")


class ToolRefusal(Exception):
    """A tool call that cannot be answered; the message is for the model (and its user)."""


def explain(exc: ClientError) -> str:
    """One sentence a model can act on, for a client failure."""
    if isinstance(exc, DaemonNotRunning):  # its message already says how to start it
        return f"{exc}; then call the tool again"
    if isinstance(exc, ConnectionLost):
        return f"the connection to memoryd was lost (the daemon restarted?): {exc}; call again"
    return str(exc)


class Bridge:
    """The daemon as the MCP tools see it: workspace defaults, camelCase results."""

    def __init__(
        self,
        client: AsyncMemoryClient,
        *,
        workspace: str | None = None,
        cwd: str | None = None,
        notices: TextIO | None = None,
        confined: bool = False,
    ) -> None:
        """``confined``: with ``workspace``, serve that workspace only (``memctl mcp -w``
        without ``--all-workspaces``): a call naming another one is refused."""
        self.client = client
        self.requested = workspace
        self.confined = confined and workspace is not None
        self.cwd = cwd or os.getcwd()
        self.notices = notices or sys.stderr
        # The agent session the client started us for (mcp_session.py): not the model's.
        self.session = client_session(os.environ)
        self._default: str | None = None
        self._known: list[WorkspaceInfo] = []

    # ------------------------------------------------------------ workspaces

    async def ready(self) -> None:
        """Before a tool's first call: connect, starting the daemon when the client may
        (autostart), once; a daemon stopped later is reported, not restarted behind the
        user's back."""
        if self.client.autostart:
            await self.client.connect()
            self.client.autostart = False

    async def _refresh(self) -> list[WorkspaceInfo]:
        self._known = await self.client.workspace_list()
        return self._known

    async def default_workspace(self) -> str:
        """The workspace named at start-up (registered on first use when it is a new path),
        else the one holding the working directory, else the only one."""
        if self._default is not None:
            return self._default
        known = await self._refresh()
        if self.requested is not None:
            if not _looks_like_path(self.requested):
                self._default = self.requested
                return self._default
            path = os.path.abspath(os.path.expanduser(self.requested))
            found = containing(known, path)
            if found is None:
                if not os.path.isdir(path):
                    raise ToolRefusal(f"the workspace folder {path} does not exist")
                change = await self.client.workspace_add(path)
                print(
                    f"memctl mcp: registered workspace {change.name} at {change.path}",
                    file=self.notices,
                    flush=True,
                )
                self._default = change.name
            else:
                self._default = found.name
            return self._default
        found = default_for(known, self.cwd)
        if found is None:
            raise ToolRefusal(choices_message(known))
        self._default = found.name
        return self._default

    async def workspace(self, given: str | None) -> str:
        """The workspace for one call: the argument (a name, or a path inside one), else the
        default. A path is sent as an absolute path; the daemon resolves it."""
        if given is None or not given.strip():
            return await self.default_workspace()
        ws = os.path.abspath(os.path.expanduser(given)) if _looks_like_path(given) else given
        if self.confined:
            default = await self.default_workspace()
            if self._name_of(ws) != default:
                raise ToolRefusal(
                    f"this server serves workspace {default} only (memctl mcp -w); omit the "
                    "workspace argument, or start the server with --all-workspaces"
                )
        return ws

    def _name_of(self, workspace: str) -> str:
        if not _looks_like_path(workspace):
            return workspace
        found = containing(self._known, workspace)
        return found.name if found is not None else workspace

    # ------------------------------------------------------------ tools

    async def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        min_score: float | None = None,
        workspace: str | None = None,
        source: str | None = None,
        since: str | None = None,
        until: str | None = None,
        include_superseded: bool = False,
    ) -> dict[str, Any]:
        if not query.strip():
            raise ToolRefusal("query is empty: say what to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolRefusal(
                f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS} "
                "(search with the key words, not a whole document)"
            )
        # No source given: where a search would look (the daemon's search.sources).
        sources = ["memory", "sessions"] if source == "all" else [source] if source else None
        ws = await self.workspace(workspace)
        result = await self.client.search(
            query,
            workspace=ws,
            max_results=max_results,
            min_score=min_score,
            sources=sources,
            since=since,
            until=until,
            project=project_key(self.cwd),
            include_superseded=include_superseded,
        )
        await self._tainted_by(result.results)
        name = self._name_of(ws)
        out: dict[str, Any] = {
            "results": [
                {
                    "path": hit.path,
                    "startLine": hit.start_line,
                    "endLine": hit.end_line,
                    "score": round(hit.score, 4),
                    "snippet": hit.snippet,
                    "snippetStartLine": hit.snippet_start_line or hit.start_line,
                    "snippetEndLine": hit.snippet_end_line or hit.end_line,
                    "source": hit.source,
                    "workspace": name,
                    **_provenance(hit),
                }
                for hit in result.results
            ],
            "mode": result.mode_used or "",
            "provider": result.provider or "",
            "model": result.model or "",
        }
        if result.degraded:
            out["degraded"] = list(result.degraded)
        if result.notices:  # why there are no hits (a query of stop words only, ...)
            out["notices"] = list(result.notices)
        return out

    async def _tainted_by(self, hits: list[SearchHit]) -> None:
        """A search that showed untrusted or system lines put them before the model: its
        session read them (a rule a web page got stored must not come back as the agent's
        note by being read and appended again)."""
        call = CALL_ID.get()
        if not (call or self.session) or all(h.origin in (None, "owner", "agent") for h in hits):
            return
        await self.client.observe(
            self.session,
            "read",
            origin="untrusted",
            what="memory_search showed untrusted lines",
            call_id=call,
        )

    async def review(self, workspace: str | None = None) -> dict[str, Any]:
        """The review queue, read-only (approving is the owner's, through memctl)."""
        ws = await self.workspace(workspace)
        found = await self.client.review_list(workspace=ws)
        items = [
            {
                "id": i.id,
                "path": i.path,
                "line": i.line,
                "text": i.text,
                "origin": i.origin,
                "reasons": i.reasons,
                **({"sessionId": i.session_id} if i.session_id else {}),
            }
            for i in found.items
        ]
        if items and (CALL_ID.get() or self.session):  # the model now read them
            await self.client.observe(
                self.session,
                "read",
                origin="untrusted",
                what="memory_review showed untrusted lines",
                call_id=CALL_ID.get(),
            )
        return {"workspace": found.workspace or ws, "items": items}

    async def get(
        self,
        path: str,
        *,
        from_line: int | None = None,
        lines: int | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        ws = await self.workspace(workspace)
        try:
            result = await self.client.get(path, workspace=ws, from_line=from_line, lines=lines)
        except NotFound:
            # OpenClaw's memory_get answers a missing file with empty text, so an agent's
            # "read today's note" before the first note of the day is not a failure.
            return {"path": path, "text": "", "from": from_line or 1, "lines": 0, "totalLines": 0}
        except ForbiddenPath as exc:
            raise ToolRefusal(
                f"{exc.message} (memory_get reads MEMORY.md, memory/**/*.md and the "
                "configured extra paths of the workspace)"
            ) from None
        out: dict[str, Any] = {
            "path": result.path,
            "text": result.text,
            "from": result.from_line,
            "lines": result.lines,
            "totalLines": result.total_lines,
        }
        if from_line is not None and from_line > max(result.total_lines, 1):
            out["notice"] = (
                f"{result.path} has {result.total_lines} lines: from {from_line} is past the end"
            )
        return out

    async def append(
        self,
        text: str,
        *,
        heading: str | None = None,
        date: str | None = None,
        workspace: str | None = None,
        origin: str | None = None,
        session_id: str | None = None,
        session_kind: str | None = None,
    ) -> dict[str, Any]:
        if not text.strip():
            raise ToolRefusal("text is empty: nothing to append")
        if origin == "owner":  # a model is not the owner (docs/provenance.md)
            raise ToolRefusal(
                "origin owner is the person's own: a model's note is agent, and content "
                "from web pages or tool output is untrusted"
            )
        if len(text) > MAX_APPEND_CHARS:
            raise ToolRefusal(
                f"text is {len(text)} characters; the limit is {MAX_APPEND_CHARS} "
                "(append the durable facts, not a transcript)"
            )
        ws = await self.workspace(workspace)
        result = await self.client.append(
            text,
            workspace=ws,
            date=date,
            heading=heading,
            origin=origin or "agent",
            session_id=self.session or session_id,  # the client's word over the model's
            session_kind=session_kind,
            via="mcp",
            call_id=CALL_ID.get(),
        )
        out: dict[str, Any] = {
            "path": result.path,
            "startLine": result.start_line,
            "endLine": result.end_line,
        }
        if result.origin:
            out["origin"] = result.origin
        if result.duplicate:
            out["duplicate"] = True
        return out

    async def forget(
        self,
        *,
        path: str | None = None,
        lines: str | None = None,
        query: str | None = None,
        session_id: str | None = None,
        max_results: int | None = None,
        workspace: str | None = None,
        confirm: bool = False,
    ) -> dict[str, Any]:
        """A dry run unless ``confirm`` (docs/lifecycle.md): a model lists, the user agrees,
        then the model applies. The pre-image is always kept (no purge over MCP), so a
        forget by mistake can be undone by hand within forget.keep_days."""
        given = [n for n, v in (("path", path), ("query", query), ("sessionId", session_id)) if v]
        if len(given) != 1:
            raise ToolRefusal("give exactly one of: path (with lines), query, sessionId")
        if bool(path) != bool(lines):
            raise ToolRefusal("path and lines go together (lines: N or A-B)")
        ws = await self.workspace(workspace)
        result = await self.client.forget(
            workspace=ws,
            path=path,
            lines=lines,
            query=query,
            session_id=session_id,
            max_results=max_results,
            dry_run=not confirm,
        )
        out: dict[str, Any] = {
            "dryRun": result.dry_run,
            "removed": [
                {"path": r.path, "lines": list(r.lines), "text": r.text, "wholeFile": r.whole_file}
                for r in result.removed
            ],
            "lines": result.lines,
            "files": result.files,
        }
        if result.session_id:
            out["sessionId"] = result.session_id
        if result.left_outside:
            out["leftOutside"] = list(result.left_outside)
        if result.kept:
            out["kept"] = result.kept
        return out

    async def export(self, *, workspace: str | None = None) -> dict[str, Any]:
        """Into the workspace's exports folder only: the daemon chooses the path."""
        ws = await self.workspace(workspace)
        raw = (await self.client.export(None, workspace=ws)).raw
        return {
            "path": str(raw.get("path", "")),
            "name": str(raw.get("name", "")),
            "files": int(raw.get("files", 0)),
            "bytes": int(raw.get("bytes", 0)),
            "sha256": str(raw.get("sha256", "")),
            "unpackedBytes": int(raw.get("unpacked_bytes", 0)),
            "dailyNotes": int(raw.get("daily_notes", 0)),
            # no daily notes: no days (left out, never null: see mcp_tool.out)
            **{k: raw[w] for k, w in _DAYS if raw.get(w)},
            "curated": list(raw.get("curated") or ()),
            "pruned": int(raw.get("pruned", 0)),
        }

    async def import_archive(
        self, archive: str, *, workspace: str | None = None, confirm: bool = False
    ) -> dict[str, Any]:
        """A dry run unless ``confirm``; always as outside content (``untrusted``: daily
        notes only, every added line untrusted; docs/lifecycle.md)."""
        archive = archive.strip()
        path: str | None = None
        name: str | None = None
        if "/" in archive or archive.startswith("~"):
            path = os.path.expanduser(archive)
            if not os.path.isabs(path):
                raise ToolRefusal(
                    "archive: give an absolute path, or the file name memory_export answered"
                )
        else:
            name = archive  # one of the workspace's exports
        ws = await self.workspace(workspace)
        if path is not None and self.confined:
            name, path = await self._own_export(ws, path), None
        raw = (
            await self.client.import_archive(
                path, export=name, workspace=ws, dry_run=not confirm, untrusted=True
            )
        ).raw
        out: dict[str, Any] = {
            "dryRun": bool(raw.get("dry_run")),
            "linesAdded": int(raw.get("lines_added", 0)),
            "linesAlreadyThere": int(raw.get("lines_already_there", 0)),
            "filesCreated": int(raw.get("files_created", 0)),
            "filesMerged": int(raw.get("files_merged", 0)),
            "redacted": int(raw.get("redacted", 0)),
            "origin": str(raw.get("origin", "untrusted")),
            "files": [_camel(f) for f in raw.get("files") or ()],
            "refused": [_camel(r) for r in raw.get("refused") or ()],
        }
        if raw.get("kept"):
            out["kept"] = raw["kept"]
        return out

    async def _own_export(self, workspace: str, path: str) -> str:
        """A confined server (``memctl mcp -w``) imports from its own workspace's exports
        folder only: another workspace's archive, or any file elsewhere, would bring that
        memory into this one. The path as an export's name, or ToolRefusal."""
        name = self._name_of(workspace)
        own = next((w for w in self._known if w.name == name), None)
        if own is None:
            own = next((w for w in await self._refresh() if w.name == name), None)
        real = os.path.realpath(path)
        if own is not None:
            folder = os.path.realpath(os.path.join(own.path, EXPORTS_FOLDER))
            if os.path.dirname(real) == folder:
                return os.path.basename(real)
        raise ToolRefusal(
            f"this server serves workspace {name} only (memctl mcp -w): it imports only from "
            f"that workspace's exports folder ({EXPORTS_FOLDER}, the names memory_export "
            "answers); importing another archive is the owner's memctl import"
        )

    async def status(self) -> dict[str, Any]:
        status = await self.client.status()
        self._known = [WorkspaceInfo(name=w.name, path=w.path) for w in status.workspaces]
        try:
            default: str | None = await self.default_workspace()
        except ToolRefusal:
            default = None
        shown = [w for w in status.workspaces if not self.confined or w.name == default]
        return {
            "version": status.version,
            "provider": {
                "name": status.provider.name,
                "model": status.provider.model,
                "reason": status.provider.reason,
            },
            **({"defaultWorkspace": default} if default is not None else {}),
            "workspaces": [
                {
                    "name": w.name,
                    "path": w.path,
                    "files": w.files,
                    "chunks": w.chunks,
                    "pendingFiles": w.pending_files,
                    "pendingVectors": w.pending_vectors,
                    "lastSync": iso_time(w.last_sync),
                    "vectorReady": w.vector_ready,
                    "degraded": list(w.degraded),
                }
                for w in shown
            ],
        }


def iso_time(value: str | float | None) -> str | None:
    """An ISO 8601 time (the daemon's epoch seconds, in the local zone); text as it is."""
    if value is None or isinstance(value, str):
        return value
    return _dt.datetime.fromtimestamp(value).astimezone().isoformat(timespec="seconds")


def _camel(item: dict[str, Any]) -> dict[str, Any]:
    """A wire object's snake_case keys in the tools' camelCase (one level)."""
    return {
        k.split("_")[0] + "".join(w.title() for w in k.split("_")[1:]): v for k, v in item.items()
    }


# ---------------------------------------------------------------- text renderings


def _provenance(hit: SearchHit) -> dict[str, Any]:
    """What a hit's lines say of themselves, in the tools' camelCase (only what is known)."""
    out: dict[str, Any] = {}
    for key, value in (
        ("tier", hit.tier),
        ("origin", hit.origin),
        ("sessionId", hit.session_id),
        ("importance", hit.importance),
        ("triggers", hit.triggers or None),
        ("project", hit.project),
        ("key", hit.key),
        ("supersedes", hit.supersedes or None),  # the older keyed lines it stands over
        ("superseded", hit.superseded or None),  # includeSuperseded: it shows an older one
    ):
        if value is not None:
            out[key] = value
    if hit.line_origins:  # each line's own origin (a line not listed: the owner's)
        out["lineOrigins"] = [
            {
                "line": x.line,
                "origin": x.origin,
                **({"sessionId": x.session_id} if x.session_id else {}),
            }
            for x in hit.line_origins
        ]
    return out


def search_text(result: dict[str, Any]) -> str:
    hits = result["results"]
    notes = [f"(note: {n})" for n in (*result.get("notices", ()), *result.get("degraded", ()))]
    if not hits:
        return "\n".join(["No memory matched this query.", *notes])
    parts = []
    for hit in hits:
        head = f"{hit['path']}:{hit['snippetStartLine']}-{hit['snippetEndLine']} {hit['score']:.2f}"
        if hit.get("superseded"):
            head += " (superseded by a newer line with the same key)"
        elif hit.get("supersedes"):
            head += f" (supersedes {', '.join(hit['supersedes'])})"
        parts.append(f"{head}\n{hit['snippet'].strip()}")
    return "\n\n".join([*parts, *notes])


def get_text(result: dict[str, Any]) -> str:
    if "notice" in result:
        return f"{result['notice']}."
    if not result["text"]:
        return f"{result['path']} is empty or does not exist yet."
    return str(result["text"])


_DAYS: Final = (("firstDay", "first_day"), ("lastDay", "last_day"))


def append_text(result: dict[str, Any]) -> str:
    if result.get("duplicate"):
        return f"Already in memory at {result['path']}:{result['startLine']}; nothing written."
    done = f"Appended to {result['path']}:{result['startLine']}-{result['endLine']}."
    if result.get("origin") in ("untrusted", "system"):
        done += (
            f" Recorded {result['origin']}: this session read outside content, so the note "
            "stays searchable but is never recalled by itself until the owner approves it."
        )
    return done


def review_text(result: dict[str, Any]) -> str:
    items = result["items"]
    if not items:
        return f"Nothing waits for review in {result['workspace']}."
    lines = [f"{len(items)} note(s) wait for the user's review in {result['workspace']}:"]
    for i in items:
        lines.append(f"- {i['id']} {i['path']}:{i['line']} ({i['origin']}): {i['text']}")
    lines.append("Only the user can approve (memctl review approve ID) or reject them.")
    return "\n".join(lines)


def status_text(result: dict[str, Any]) -> str:
    p = result["provider"]
    lines = [f"memoryd {result['version']}; embeddings: {p['name']} {p['model'] or ''}".rstrip()]
    for w in result["workspaces"]:
        mark = " (default)" if w["name"] == result.get("defaultWorkspace") else ""
        lines.append(
            f"{w['name']}{mark}: {w['path']}; {w['files']} files, {w['chunks']} chunks, "
            f"{w['pendingFiles']} files pending, last sync {w['lastSync'] or 'never'}"
        )
        lines.extend(f"  degraded: {reason}" for reason in w["degraded"])
    if not result["workspaces"]:
        lines.append("no workspace registered (memctl workspace add PATH)")
    return "\n".join(lines)
