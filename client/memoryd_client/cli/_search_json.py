"""``memctl search --json`` without memctl's parser: what an agent with a shell runs (the
skill) for every question about prior work, each time a fresh process.

The search command's options are read here by hand, the daemon is asked over the plain-map
connection (``memoryd_client._connection``), and its answer's map is printed as the full
path prints it: the same JSON, the same notes on stderr, the same errors and exit codes.
Nothing here imports argparse, the result types, dataclasses, pathlib or typing. Whatever
it would not read exactly as the parser does (``--help``, ``--all``, ``--fleet``, ``-`` for
stdin, an abbreviated or unknown option, a value the parser refuses, a usage error) goes to
the full path (:func:`search_json` returns None) before anything is sent.

A search across workspaces is merged here for both paths (:func:`merge_searches`).
"""

from __future__ import annotations

from memoryd_client import search_options
from memoryd_client._connection import DEFAULT_TIMEOUT, Connection
from memoryd_client._params import search_params
from memoryd_client._socket_path import socket_file
from memoryd_client.cli._base import PROG, cwd_if_in_one, workspace_param, write_json, write_note
from memoryd_client.cli._outcome import failed
from memoryd_client.errors import BadResponse
from memoryd_client.search_options import CHOICE, COUNT, DAY, FLAG, SCORE, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

DEFAULT_MAX_RESULTS = 6  # search.max_results' default

# memctl's own options, read here as the parser reads them; a search's options are the
# table's rows (search_options.OPTIONS), each read by its kind (_read_value).
_COMMON = {
    "-w": "workspace",
    "--workspace": "workspace",
    "--socket": "socket",
    "--timeout": "timeout",
    "-q": "query_option",
    "--query": "query_option",
}
_FOR_THE_PARSER = ("fleet",)  # where to search, with the parser's usage checks (-w, --all)


class _ForTheParser(Exception):
    """These words are the full parser's to read (or to refuse, with its usage message)."""


def search_json(argv: list[str], out: TextIO, err: TextIO) -> int | None:
    """Run ``memctl search ... --json``; None when the full path must (nothing sent)."""
    try:
        opts = parse(argv)
    except _ForTheParser:
        return None
    socket = opts.pop("socket")
    conn = Connection(
        socket_file(override=socket),
        explicit_socket=socket is not None,
        timeout=opts.pop("timeout"),
        autostart=False,
        client_name=PROG,
    )
    try:
        answer = _search(conn, opts)
        notices = strs(answer, "notices")
        write_json(out, answer)
        for notice in notices:
            write_note(err, notice)
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        return failed(exc, out, err, True)
    finally:
        conn.close()


def _search(conn: Connection, opts: dict[str, Any]) -> dict[str, Any]:
    """The daemon's answer (merged across workspaces when the search spans several)."""
    query, given = opts.pop("query"), opts.pop("workspace")
    workspace, names = (workspace_param(given), []) if given else (None, [])
    if workspace is None:  # the workspace holding the current directory, else every one
        listed = _map(conn.request("workspace.list", {}), "workspace.list")
        entries = listed.get("workspaces")
        if not isinstance(entries, list) or not all(_is_entry(e) for e in entries):
            raise BadResponse(f"malformed workspace.list result from the daemon: {listed!r}")
        workspace = cwd_if_in_one(e["path"] for e in entries)
        names = [e["name"] for e in entries] if workspace is None else []
    if len(names) > 1:
        return merge_searches(
            names,
            lambda name: conn.request("search", search_params(query, workspace=name, **opts)),
            opts["max_results"],
        )
    return _map(conn.request("search", search_params(query, workspace=workspace, **opts)), "search")


def merge_searches(
    names: list[str], search: Callable[[str], Any], max_results: int | None
) -> dict[str, Any]:
    """The best hits of every named workspace, each hit carrying its workspace: one search
    per workspace (``search(name)``: its answer's map), merged by score. Each workspace's
    scores are on the same 0..1 scale (cosine and BM25 relative to its own best keyword
    hit), so the merge is a fair ranking though not identical to one index over all."""
    answers = [(name, _map(search(name), "search")) for name in names]
    hits = [{**hit, "workspace": name} for name, a in answers for hit in _hits(a)]
    # Each workspace answered its own top max_results (its default when not given); the
    # merge keeps as many, the daemon's default when unknown here.
    ranked = sorted(hits, key=lambda hit: -float(hit["score"]))[
        : max_results or DEFAULT_MAX_RESULTS
    ]
    degraded = [f"{name}: {d}" for name, a in answers for d in strs(a, "degraded")]
    notices = list(dict.fromkeys(n for _, a in answers for n in strs(a, "notices")))
    merged: dict[str, Any] = {
        "results": ranked,
        "workspaces": names,
        "mode_used": ",".join(sorted({a["mode_used"] for _, a in answers if a.get("mode_used")})),
        "took_ms": round(sum(float(a.get("took_ms") or 0.0) for _, a in answers), 3),
        "pending_files": sum(a.get("pending_files") or 0 for _, a in answers),
    }
    if degraded:
        merged["degraded"] = degraded
    if notices:
        merged["notices"] = notices
    return merged


def strs(answer: dict[str, Any], key: str) -> list[str]:
    """A list of strings in an answer (a single string is a list of one), as the result
    types read it."""
    value = answer.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise BadResponse(f"malformed search result from the daemon: {key!r} is {value!r}")
    return [str(v) for v in value]


def _hits(answer: dict[str, Any]) -> list[dict[str, Any]]:
    hits = answer.get("results") or []
    if not isinstance(hits, list) or not all(
        isinstance(h, dict) and isinstance(h.get("score"), int | float) for h in hits
    ):
        raise BadResponse(f"malformed search result from the daemon: {answer!r}")
    return hits


def _map(result: Any, method: str) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise BadResponse(f"malformed {method} result from the daemon: {result!r}")
    return result


def _is_entry(entry: Any) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("name", "path"))


# ---------------------------------------------------------------- the options


def parse(argv: list[str]) -> dict[str, Any]:
    """``search``'s options as the parser would read them, or :class:`_ForTheParser`."""
    rows = {o.name: o for o in search_options.OPTIONS if o.name not in _FOR_THE_PARSER}
    flags = {"--json": "json"}
    valued = dict(_COMMON)
    for row in rows.values():
        for flag in row.flags:
            (flags if row.kind == FLAG else valued)[flag] = row.name
    opts: dict[str, Any] = dict.fromkeys((*valued.values(), *flags.values()))
    opts.update({name: False for name in flags.values()}, timeout=DEFAULT_TIMEOUT)
    words: list[str] = []
    words_ended = False  # the parser takes the query's words as one run
    args = iter(argv[1:])
    for arg in args:
        if not arg.startswith("-"):
            if words_ended:
                raise _ForTheParser()
            words.append(arg)
            continue
        words_ended = bool(words)
        name, eq, inline = arg.partition("=")
        if name in flags and not eq:
            opts[flags[name]] = True
            continue
        key = valued.get(name)
        value = inline if eq else next(args, None)
        if key is None or value is None or (not eq and value.startswith("-")):
            raise _ForTheParser()  # unknown, abbreviated, '-' (stdin), or no value
        option = rows.get(key)
        read = _read_value(option.kind if option else key, option, value)
        opts[key] = [*(opts[key] or []), read] if option and option.repeat else read
    query = opts.pop("query_option")
    if not opts.pop("json") or (query is not None and words) or opts["socket"] == "":
        raise _ForTheParser()
    text = query if query is not None else " ".join(words)
    if not text.strip():
        raise _ForTheParser()  # the parser's usage error: an empty query
    opts["query"] = text
    return opts


def _read_value(kind: str, option: Option | None, value: str) -> Any:
    """``value`` as the parser reads a flag of this ``kind`` (an option's, or ``timeout``);
    :class:`_ForTheParser` when the parser would refuse it (its message is the one to show)."""
    try:
        if kind == COUNT:
            number = int(value)
            if number >= 1:
                return number
        elif kind in (SCORE, "timeout"):
            real = float(value)
            if (0.0 <= real <= 1.0) if kind == SCORE else real > 0:
                return real
        elif kind == DAY:
            import datetime as _dt

            _dt.date.fromisoformat(value)
            return value
        elif kind == CHOICE:
            from memoryd_client import search_terms  # the choices: only when one is given

            assert option is not None and option.choices is not None
            if value in getattr(search_terms, option.choices):
                return value
        else:
            return value
    except ValueError:
        pass
    raise _ForTheParser()
