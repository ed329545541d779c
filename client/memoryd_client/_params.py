"""How the params of the calls memctl's lean paths make are written for the wire (None
means "leave it out, let the daemon default it"): ``search``, ``recall``, ``flush`` and
``flush.agent``. The typed clients' builders (``_calls``) write theirs with these too, so
each call's params exist once; this module imports no result types and no typing at run
time (the hook and ``memctl search --json`` build their params here).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Iterable
    from typing import Any, Unpack

    from memoryd_client.search_options import SearchOptions

    DateLike = _dt.date | str


def omit_none(**kwargs: Any) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


def iso(value: DateLike | None) -> str | None:
    """A day as the wire's YYYY-MM-DD."""
    if value is None or isinstance(value, str):
        return value
    return value.isoformat()


def as_list(values: str | Iterable[str] | None) -> list[str] | None:
    """One value or several (sources, projects), as the wire's list."""
    if values is None:
        return None
    return [values] if isinstance(values, str) else list(values)


def search_params(
    query: str, *, workspace: str | None = None, **options: Unpack[SearchOptions]
) -> dict[str, Any]:
    """``search``'s params: ``options`` are the rows of
    :data:`memoryd_client.search_options.OPTIONS`, each written as its kind says."""
    return params_of_search(query, workspace, options)


def params_of_search(query: str, workspace: str | None, options: SearchOptions) -> dict[str, Any]:
    """search_params of ``options`` as the map a caller's ``**options`` made (the typed
    clients pass theirs on as it is: each ``**`` on the way was a map made again)."""
    params: dict[str, Any] = {"query": query}
    if workspace is not None:
        params["workspace"] = workspace
    if not options:
        return params
    table = _search_options or _load_search_options()
    seen, ways = _ways
    if seen is not table.OPTIONS:  # first use, or the table made again
        ways = _load_ways(table)
    for name, value in options.items():
        way = ways.get(name, _UNKNOWN)
        if way is None:  # taken as it is (a count, a score, a text, a choice)
            if value is not None:  # None: the daemon's default
                params[name] = value
        elif way is _UNKNOWN:
            raise TypeError(f"search() got an unexpected keyword argument {name!r}")
        elif value is not None:
            value = way(value)
            if value is not None:
                params[name] = value
    return params


def _flag(value: object) -> bool | None:
    return True if value else None  # sent only when on


# search_options, once a search has options (recall, the prompt hook's path, needs none;
# an import statement in search_params was a third of its cost), and its rows by name ->
# how each value is written (None: as it is), made from the table once (the kinds read per
# option were another third).
_search_options: Any = None
_UNKNOWN: Any = object()
_ways: tuple[Any, dict[str, Any]] = (None, {})  # (the table's OPTIONS, the ways)


def _load_search_options() -> Any:
    global _search_options
    from memoryd_client import search_options

    _search_options = search_options
    return search_options


def _load_ways(table: Any) -> dict[str, Any]:
    global _ways
    ways: dict[str, Any] = {}
    for name, option in table.by_name().items():
        kind = option.kind
        if kind == table.FLAG:
            ways[name] = _flag
        elif option.repeat:
            ways[name] = as_list
        elif kind == table.DAY:
            ways[name] = iso
        else:
            ways[name] = None
    _ways = (table.OPTIONS, ways)
    return ways


def recall_params(
    query: str,
    *,
    workspace: str | None = None,
    budget_tokens: int | None = None,
    min_score: float | None = None,
    sources: str | Iterable[str] | None = None,
    project: str | Iterable[str] | None = None,
    now: DateLike | None = None,
    include_superseded: bool = False,
    agent: str | None = None,
) -> dict[str, Any]:
    """``agent``: who the block is for, as ``memctl stats`` counts it (default: the
    connection's client name)."""
    return omit_none(
        agent=agent,
        query=query,
        workspace=workspace,
        budget_tokens=budget_tokens,
        min_score=min_score,
        sources=as_list(sources),
        project=as_list(project),
        now=iso(now),
        include_superseded=include_superseded or None,
    )


def observe_params(
    session_id: str | None,
    event: str,
    *,
    workspace: str | None = None,
    origin: str | None = None,
    tool: str | None = None,
    command: str | None = None,
    path: str | None = None,
    cwd: str | None = None,
    what: str | None = None,
    call_id: str | None = None,
    session_kind: str | None = None,
) -> dict[str, Any]:
    """``observe``'s params: what an agent session did (docs/provenance.md, observers)."""
    return omit_none(
        session_id=session_id,
        event=event,
        workspace=workspace,
        origin=origin,
        tool=tool,
        command=command,
        path=path,
        cwd=cwd,
        what=what,
        call_id=call_id,
        session_kind=session_kind,
    )


def flush_params(
    transcript: str | os.PathLike[str],
    session_id: str,
    *,
    workspace: str | None = None,
    wait: bool = False,
    trigger: str | None = None,
    session_kind: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """``flush``'s params; ``flush.agent`` takes the first three. The daemon reads the
    transcript itself: it wants an absolute path. ``agent``: whose LLM tokens (stats)."""
    return omit_none(
        agent=agent,
        transcript=os.path.abspath(os.path.expanduser(transcript)),
        session_id=session_id,
        workspace=workspace,
        wait=wait or None,
        trigger=trigger,
        session_kind=session_kind,
    )
