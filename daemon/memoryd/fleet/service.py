"""The daemon's side of fleet mode: a publishing task, remote searches and reads, status.

Postgres work runs on two threads of its own (one publishes, one answers remote searches,
each with its own connection), so a slow or dead Postgres never holds up the event loop or
a local search. Connection failures make the fleet ``unavailable`` (status says why);
publishing reconnects with back-off and catches up from the versions in Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import psycopg
from pgvector.psycopg import register_vector

from memoryd.embeddings.base import EmbeddingProvider, Vectors, as_query_vector, embed_query
from memoryd.errors import Unavailable
from memoryd.files.reader import read_lines
from memoryd.fleet import lease
from memoryd.fleet.local_reader import LocalIndexReader
from memoryd.fleet.postgres_schema import SchemaTooNew, ensure_schema
from memoryd.fleet.publisher import Fingerprint, WorkspacePublisher
from memoryd.fleet.remote_search import RemoteIndex, RemoteWorkspace, fold_synced
from memoryd.fleet.settings import FleetSettings
from memoryd.index.query_vectors import PreparedQuery
from memoryd.index.types import SearchRequest
from memoryd.index.workspace import WorkspaceIndex
from memoryd.runtime.config import Config
from memoryd.runtime.logs import get_logger
from memoryd.workspace.served import Workspace

log = get_logger("memoryd.fleet")
POLL_S = 0.25  # how often the publisher looks at the local generations (no I/O when idle)
T = TypeVar("T")


class FleetService:
    def __init__(
        self,
        settings: FleetSettings,
        holder: str,
        workspaces: Callable[[], list[Workspace]],
        config: Callable[[], Config],
        sync_id: Callable[[Path], str] = lambda root: "",
    ) -> None:
        """``sync_id``: a git-synced workspace's identity (its remote and branch; '' when
        it does not sync), published so fleet search reads one copy of it."""
        self.settings = settings
        self.holder = holder
        self._workspaces = workspaces
        self._config = config
        self._sync_id = sync_id
        self._pub_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-fleet-publish")
        self._search_thread = ThreadPoolExecutor(1, thread_name_prefix="memoryd-fleet-search")
        self._pub_conn: psycopg.Connection[Any] | None = None
        self._search_conn: psycopg.Connection[Any] | None = None
        self._remote = RemoteIndex(settings.schema)
        self._pubs: dict[str, WorkspacePublisher] = {}
        self._readers: dict[str, LocalIndexReader] = {}
        self._refused: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._lock = threading.Lock()
        self.state = "connecting"  # connected | unavailable
        self.error: str | None = None
        self.connected_since: float | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="memoryd-fleet")
        log.info("fleet_start", host=self.settings.host, dsn=self.settings.shown)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(
                loop.run_in_executor(self._pub_thread, self._release_all),
                self.settings.connect_timeout,
            )
        self._pub_thread.shutdown(wait=False, cancel_futures=True)
        self._search_thread.shutdown(wait=False, cancel_futures=True)

    def _release_all(self) -> None:
        conn = self._pub_conn
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                for pub in self._pubs.values():
                    if pub.ws_id is not None:
                        lease.release(conn, self.settings.schema, pub.ws_id, self.holder)
            conn.close()
        self._pub_conn = None
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        if self._search_conn is not None:
            self._search_conn.close()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        delay = 1.0
        while True:
            # The registry belongs to the loop: the thread gets a snapshot of it.
            live = {ws.name: ws.index for ws in self._workspaces() if ws.index is not None}
            try:
                await loop.run_in_executor(self._pub_thread, self._cycle, live)
                delay = 1.0
                await asyncio.sleep(POLL_S)
            except (psycopg.Error, SchemaTooNew) as exc:
                self._down(exc)
                await loop.run_in_executor(self._pub_thread, self._drop_pub_conn)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.retry_max_seconds)
            except Exception as exc:  # a local read failing: logged, tried again later
                log.exception("fleet_publish_failed", error=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.retry_max_seconds)

    def _down(self, exc: BaseException) -> None:
        text = _error_text(exc)
        if self.state != "unavailable" or self.error != text:
            log.warning(
                "fleet_unavailable",
                error=text,
                dsn=self.settings.shown,
                action="local search unaffected; publishing resumes when it is back",
            )
        self.state, self.error, self.connected_since = "unavailable", text, None

    def _connect(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] = psycopg.connect(self.settings.conninfo, autocommit=True)
        try:
            ensure_schema(conn, self.settings.schema)
            register_vector(conn)  # numpy arrays in and out of pgvector columns
        except BaseException:
            conn.close()
            raise
        if self.state != "connected":
            log.info("fleet_connected", dsn=self.settings.shown, host=self.settings.host)
        self.state, self.error = "connected", None
        self.connected_since = self.connected_since or time.time()
        return conn

    def _drop_pub_conn(self) -> None:
        conn, self._pub_conn = self._pub_conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        for pub in self._pubs.values():
            pub.forget()  # the versions are read again: whatever changed meanwhile is sent

    # ------------------------------------------------------------------ publishing

    def _cycle(self, live: dict[str, WorkspaceIndex]) -> None:
        """One pass over the workspaces (publisher thread): publish what changed."""
        for name in [n for n in self._pubs if n not in live]:
            self._forget(name)
        for name, index in live.items():
            self._publish_one(name, index)

    def _publish_one(self, name: str, index: WorkspaceIndex) -> None:
        """Publish workspace ``name`` if its index moved (publisher thread)."""
        pub = self._pubs.get(name)
        if pub is None:
            pub = WorkspacePublisher(
                self.settings.schema,
                self.settings.host,
                name,
                self.holder,
                self.settings.lease_seconds,
            )
            with self._lock:
                self._pubs[name] = pub
        generation = index.generation
        if not pub.due(generation):
            return
        if self._pub_conn is None:
            self._pub_conn = self._connect()
        reader = self._readers.get(name)
        if reader is None or reader.db_path != index.db_path or reader.owner is not index:
            if reader is not None:  # the workspace was removed and added again
                reader.close()
            reader = self._readers[name] = LocalIndexReader(index.db_path, text_reader(index))
            reader.owner = index
        try:
            report = pub.publish(
                self._pub_conn, reader, generation, _fingerprint(index), self._sync_id(index.root)
            )
        except lease.LeaseRefused as exc:
            pub.renewed_at = time.monotonic()  # asked again in lease_seconds / 3
            if self._refused.get(name) != exc.message:
                log.error("fleet_lease_refused", workspace=name, error=exc.message)
            with self._lock:
                self._refused[name] = exc.message
            return
        if name in self._refused:
            log.info("fleet_lease_taken", workspace=name)
            with self._lock:
                del self._refused[name]
        if report.files or report.removed:
            log.info(
                "fleet_published",
                workspace=name,
                files=report.files,
                chunks=report.chunks,
                removed=report.removed,
                ms=round(report.seconds * 1000, 1),
            )

    async def publish_now(self, name: str, index: WorkspaceIndex) -> str:
        """Publish workspace ``name`` now, not at the next pass: a forget must not leave its
        lines in fleet search meanwhile. "published"; else why not ("unavailable: ...",
        "pending": not within the connect timeout), and the next pass publishes it."""

        def run() -> str:
            try:
                self._publish_one(name, index)
            except (psycopg.Error, SchemaTooNew) as exc:
                self._down(exc)
                self._drop_pub_conn()
                return f"unavailable: {_error_text(exc)}"
            with self._lock:
                refused = self._refused.get(name)
            return f"unavailable: {refused}" if refused else "published"

        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self._pub_thread, run)  # after a pass under way
        try:
            return await asyncio.wait_for(asyncio.shield(job), 2 * self.settings.connect_timeout)
        except TimeoutError:
            return "pending"

    def _forget(self, name: str) -> None:
        with self._lock:
            pub = self._pubs.pop(name)
            self._refused.pop(name, None)
        reader = self._readers.pop(name, None)
        if reader is not None:
            reader.close()
        if pub.ws_id is not None and self._pub_conn is not None:
            with contextlib.suppress(psycopg.Error):
                lease.release(self._pub_conn, self.settings.schema, pub.ws_id, self.holder)

    # ------------------------------------------------------------------ remote reads

    def _ask(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Search thread: ``fn`` on the search connection, reconnecting once when it broke."""
        for attempt in (1, 2):
            try:
                if self._search_conn is None or self._search_conn.closed:
                    self._search_conn = self._connect()
                return fn(self._search_conn)
            except (psycopg.OperationalError, psycopg.InterfaceError, SchemaTooNew) as exc:
                if self._search_conn is not None:
                    with contextlib.suppress(Exception):
                        self._search_conn.close()
                self._search_conn = None
                if attempt == 2:
                    self._down(exc)
                    raise Unavailable(
                        f"the fleet's Postgres is unavailable: {_error_text(exc)}",
                        {"dsn": self.settings.shown},
                    ) from None
            except psycopg.errors.UndefinedTable:
                with contextlib.suppress(Exception):
                    assert self._search_conn is not None
                    ensure_schema(self._search_conn, self.settings.schema)
        raise AssertionError("unreachable")

    async def _run_ask(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_thread, self._ask, fn)

    @property
    def host(self) -> str:
        """This daemon's name in the fleet (hits carry it as ``host``)."""
        return self.settings.host

    def split_ref(self, ref: str | None) -> tuple[str, str] | None:
        """(host, name) when ``ref`` names another host's workspace ("host:name")."""
        if ref is None or ":" not in ref or "/" in ref:
            return None
        host, _, name = ref.partition(":")
        return (host, name) if host and name else None

    async def search(
        self,
        req: SearchRequest,
        host: str | None,
        name: str | None,
        qvec: Vectors | None,
        provider: tuple[str, str],
    ) -> dict[str, Any]:
        """One remote workspace (host and name), or every published one (both None)."""
        cfg = self._config()
        started = time.perf_counter()

        def run(conn: psycopg.Connection[Any]) -> dict[str, Any]:
            folded: dict[tuple[str, str], RemoteWorkspace] = {}
            if host and name:
                found = [self._remote.one(conn, host, name)]
            else:  # a workspace synced to several hosts: its lines once, not once per host
                found, folded = fold_synced(self._remote.workspaces(conn), self.settings.host)
            now = conn.execute("SELECT now()").fetchone()
            now_ts: dt.datetime = now[0] if now else dt.datetime.now(dt.UTC)
            results: list[dict[str, Any]] = []
            degraded: list[str] = []
            modes = set()
            for ws in found:
                usable = (
                    qvec is not None
                    and (ws.provider, ws.model) == provider
                    and ws.dims == (qvec.shape[0] if qvec is not None else 0)
                )
                if qvec is not None and not usable and req.mode != "keyword":
                    degraded.append(
                        f"{ws.host}:{ws.name} was embedded with "
                        f"{ws.provider or 'no provider'} {ws.model}, this daemon "
                        f"embeds with {provider[0]} {provider[1]}: keyword only"
                    )
                hits, mode = self._remote.search(
                    conn,
                    ws,
                    req,
                    cfg.search,
                    qvec if usable else None,
                    cfg.index.vector_window_tokens,
                )
                modes.add(mode)
                fresh = ws.freshness(now_ts)
                for h in hits:
                    results.append(h.to_dict() | fresh)
            results.sort(key=lambda r: -float(r["score"]))
            limit = req.max_results or cfg.search.max_results
            out: dict[str, Any] = {
                "results": results[:limit],
                "provider": provider[0],
                "model": provider[1],
                "mode_used": "hybrid"
                if "hybrid" in modes
                else (modes.pop() if modes else "keyword"),
                "fleet": [w.freshness(now_ts) for w in found]
                + [
                    {"host": h, "workspace": n, "same_as": f"{w.host}:{w.name}"}
                    for (h, n), w in sorted(folded.items())
                ],
                "took_ms": round((time.perf_counter() - started) * 1000, 3),
                "index_generation": 0,
                "pending_files": 0,
            }
            if degraded:
                out["degraded"] = "; ".join(degraded)
            return out

        return await self._run_ask(run)

    async def answer_search(
        self,
        req: SearchRequest,
        ref: str | None,
        provider: EmbeddingProvider | None,
        embedder: Executor,
        prepared: PreparedQuery | None = None,
    ) -> dict[str, Any]:
        """The ``search`` method for "host:name" (ref) or the whole fleet (ref None).
        ``prepared``: the query's vector as a local search prepares it (a local index's query
        side: its cache, the fallback while the provider fails, its reasons for none); else
        the query is embedded here, with this daemon's provider, on ``embedder``, as a query
        (a model with a query prefix embeds it so, as a local search does)."""
        qvec, note = (None, None) if prepared is None else prepared
        if prepared is None and req.mode != "keyword" and provider is not None:
            loop = asyncio.get_running_loop()
            try:
                qvec = await loop.run_in_executor(
                    embedder, lambda: as_query_vector(embed_query(provider, req.query))
                )
            except Exception as exc:  # the provider down: keyword results, as locally
                note = f"query embedding failed: {_error_text(exc)}"
        host, name = self.split_ref(ref) or (None, None)
        out = await self.search(
            req, host, name, qvec, (provider.name, provider.model) if provider else ("none", "")
        )
        if note:
            out["degraded"] = "; ".join(x for x in (note, out.get("degraded")) if x)
        return out

    async def get(
        self, host: str, name: str, path: str, from_line: int | None, lines: int | None
    ) -> dict[str, Any]:
        def run(conn: psycopg.Connection[Any]) -> dict[str, Any]:
            ws = self._remote.one(conn, host, name)
            result = self._remote.get(conn, ws, path, from_line, lines)
            now = conn.execute("SELECT now()").fetchone()
            return result.to_dict() | ws.freshness(now[0] if now else dt.datetime.now(dt.UTC))

        return await self._run_ask(run)

    # ------------------------------------------------------------------ status

    def local_status(self) -> dict[str, Any]:
        """What this daemon knows without asking Postgres (status; never blocks)."""
        live = {ws.name: ws.index for ws in self._workspaces() if ws.index is not None}
        with self._lock:  # the publisher thread changes these
            pubs, refused = dict(self._pubs), dict(self._refused)
        workspaces = {}
        for name, index in live.items():
            pub = pubs.get(name)
            item: dict[str, Any] = {"state": "waiting"}
            if name in refused:
                item = {"state": "refused", "error": refused[name]}
            elif pub is not None and pub.published_at is not None:
                item = {
                    "state": "published" if pub.generation == index.generation else "publishing",
                    "published_at": dt.datetime.fromtimestamp(pub.published_at, dt.UTC).isoformat(),
                    "lag_generations": max(0, index.generation - pub.generation),
                    "files": len(pub.published or {}),
                }
            workspaces[name] = item
        degraded = []
        if self.state == "unavailable":
            degraded.append(
                f"fleet: Postgres unavailable ({self.error}): remote workspaces "
                "cannot be searched; publishing resumes when it is back"
            )
        degraded += [f"fleet: {msg}" for msg in refused.values()]
        return {
            "host": self.settings.host,
            "dsn": self.settings.shown,
            "state": self.state,
            "error": self.error,
            "workspaces": workspaces,
            "degraded": degraded,
        }

    async def status(self) -> dict[str, Any]:
        """local_status plus every host and workspace Postgres knows (memctl fleet status)."""
        out = self.local_status()

        def run(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
            now = conn.execute("SELECT now()").fetchone()
            now_ts = now[0] if now else dt.datetime.now(dt.UTC)
            return [_remote_row(w, now_ts) for w in self._remote.workspaces(conn)]

        try:
            out["fleet"] = await self._run_ask(run)
        except Unavailable as exc:
            out["fleet"] = None
            out["state"], out["error"] = "unavailable", exc.message
        return out


def _remote_row(w: RemoteWorkspace, now: dt.datetime) -> dict[str, Any]:
    return w.freshness(now) | {
        "chunks": w.n_chunks,
        "provider": w.provider,
        "model": w.model,
        "holder": w.holder_info if w.lease_live else None,
    }


def _fingerprint(index: WorkspaceIndex) -> Fingerprint:
    p = index.queries.provider
    return Fingerprint(p.name, p.model, p.dims or 0) if p is not None else Fingerprint()


def text_reader(index: WorkspaceIndex) -> Callable[[str], str | None]:
    """A file's text as ``get`` reads it (the same layout rule), None when get would refuse."""

    def read(path: str) -> str | None:
        try:
            found = read_lines(index.layout, path, None, None, index.config.index.max_file_bytes)
        except Exception:  # not readable with get (any reason): published without a body
            return None
        return found.text + "\n"

    return read


def _error_text(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
