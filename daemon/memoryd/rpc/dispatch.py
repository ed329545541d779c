"""The method table (docs/protocol.md) and the mapping of failures to wire errors.

The handlers live in groups (``rpc/*_methods.py``), each made with the pieces it works
with; ``Dispatcher`` holds their union and answers a request. The groups a daemon started
by a question does not need for it come later, made (their modules imported) by the daemon
once it has answered: ``later`` all at once, or at once by a request for a method not in
the table yet; an ``OnCall`` group alone, by the first request for one of its methods (a
hook's first ``recall`` imports neither the jobs nor ``workspace.add``'s modules). A group
that cannot be made (its import fails) answers that request ``internal`` and is tried
again at the next; the daemon serves on.
Each handler validates its params strictly (params.py), then does its work; engine calls
block, so they run in threads. Our own errors carry their wire code; anything else is an
``internal`` error with a logged traceback, and the daemon keeps serving.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from memoryd.errors import InvalidParams, MemorydError
from memoryd.records import Record
from memoryd.rpc.failures import known_failure
from memoryd.rpc.params import Params
from memoryd.rpc.server import Outcome, Request
from memoryd.runtime.logs import get_logger
from memoryd_client import protocol
from memoryd_client.protocol import ErrorCode

if TYPE_CHECKING:  # what the type checker knows them as (records.py says why)
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record

log = get_logger("memoryd.rpc.dispatch")

Handler = Callable[[Params, Request], Awaitable[dict[str, Any]]]


class HandlerGroup(Protocol):
    def table(self) -> dict[str, Handler]: ...


@frozen_record(frozen=True, eq=False, repr=False)
class OnCall(Record):
    """A group made by the first request for one of its ``methods`` (which must be its
    table's, no more, no fewer), or with the later groups."""

    methods: frozenset[str]
    make: Callable[[], HandlerGroup]  # imports the group's module


class Dispatcher:
    """Every group's methods in one table (``table``: also the extension point tests use)."""

    def __init__(
        self,
        groups: Iterable[HandlerGroup],
        later: Callable[[], Iterable[HandlerGroup]] | None = None,
        on_call: Iterable[OnCall] = (),
    ) -> None:
        self._table: dict[str, Handler] = {}
        self._later = later
        self._on_call: dict[str, OnCall] = {}
        self._add(groups)
        for group in on_call:
            for method in sorted(group.methods):
                if method in self._table or method in self._on_call:
                    raise ValueError(f"methods in two groups: {method}")
                self._on_call[method] = group

    @property
    def table(self) -> dict[str, Handler]:
        """Every method, the later groups' too (made now if they were not yet)."""
        self.load_later()
        return self._table

    def load_later(self) -> None:
        """Make the later groups (once), then each ``OnCall`` group not made yet: one that
        fails is logged and left to its first request."""
        self._load_bulk()
        for group in list({id(g): g for g in self._on_call.values()}.values()):
            try:
                self._make(group)
            except Exception:
                log.exception("method_group_failed", methods=sorted(group.methods))

    def _load_bulk(self) -> None:
        if self._later is not None:
            groups = list(self._later())  # a failure here leaves them to the next call
            self._later = None
            self._add(groups)

    def _make(self, group: OnCall) -> None:
        made = group.make()  # a failure leaves it to the next request for its methods
        methods = made.table()
        if set(methods) != group.methods:  # a defect: the wiring names what it answers
            raise ValueError(
                f"{type(made).__name__} answers {sorted(methods)}, not {sorted(group.methods)}"
            )
        for method in group.methods:
            del self._on_call[method]
        self._add([made])

    def _add(self, groups: Iterable[HandlerGroup]) -> None:
        for group in groups:
            methods = group.table()
            twice = sorted(set(methods) & (set(self._table) | set(self._on_call)))
            if twice:  # a method has one home: a second would silently win
                raise ValueError(f"methods in two groups: {', '.join(twice)}")
            self._table.update(methods)

    def _handler_made(self, method: str) -> Handler | None:
        """The handler of a method whose group is not made yet: made now (raises what
        making it raised)."""
        group = self._on_call.get(method)
        if group is not None:
            self._make(group)
        else:
            self._load_bulk()
        return self._table.get(method)

    async def dispatch(self, req: Request) -> Outcome:
        handler = self._table.get(req.method)
        if handler is None:
            try:  # its group, made now; a failure answers this request, not the socket
                handler = self._handler_made(req.method)
            except Exception as exc:
                return _internal(req, exc)
        if handler is None:
            known = ", ".join(sorted({*self._table, *self._on_call}))
            return Outcome(
                protocol.error(
                    req.id,
                    ErrorCode.UNKNOWN_METHOD,
                    f"unknown method {req.method!r} (known: {known})",
                ),
                ErrorCode.UNKNOWN_METHOD,
            )
        try:
            if not isinstance(req.params, dict):
                raise InvalidParams("params must be a map", {"param": "params"})
            result = await handler(Params(req.method, req.params), req)
        except MemorydError as exc:
            return Outcome(protocol.error(req.id, exc.code, exc.message, exc.data), exc.code)
        except Exception as exc:
            failure = known_failure(exc)
            if failure is not None:
                log.warning("request_failed", method=req.method, id=req.id, error=failure.message)
                return Outcome(protocol.error(req.id, failure.code, failure.message), failure.code)
            return _internal(req, exc)
        return Outcome(protocol.response(req.id, result), "ok")


def _internal(req: Request, exc: Exception) -> Outcome:
    """An ``internal`` error for this request, its traceback logged; the daemon serves on."""
    log.exception("internal_error", method=req.method, id=req.id)
    text = f"{type(exc).__name__}: {exc}"
    return Outcome(
        protocol.error(req.id, ErrorCode.INTERNAL, f"internal error in {req.method}: {text[:300]}"),
        ErrorCode.INTERNAL,
    )
