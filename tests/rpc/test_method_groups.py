"""The method table is the union of handler groups (rpc/dispatch.py), each made with the
named pieces it works with (rpc/wiring.py), never the whole daemon."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from daemon_util import DaemonThread
from memoryd.rpc.dispatch import Dispatcher, Handler, OnCall
from memoryd.rpc.params import Params
from memoryd.rpc.server import Request

REPO = Path(__file__).resolve().parents[2]
RPC = REPO / "daemon" / "memoryd" / "rpc"


def documented_methods() -> set[str]:
    text = (REPO / "docs" / "protocol.md").read_text()
    table = text.split("## Methods", 1)[1].split("\n\n", 2)[1]
    return set(re.findall(r"^\| `([a-z_.]+)` \|", table, flags=re.M))


def test_the_daemon_answers_every_documented_method_and_no_other(
    md_daemon: DaemonThread,
) -> None:
    assert md_daemon.daemon is not None
    documented = documented_methods()
    assert len(documented) > 20
    assert set(md_daemon.daemon.methods.table) == documented


def test_a_method_in_two_groups_is_refused_when_the_table_is_made() -> None:
    async def hello(p: Params, req: Request) -> dict[str, Any]:
        return {}

    class Group:
        def table(self) -> dict[str, Handler]:
            return {"hello": hello}

    with pytest.raises(ValueError, match="methods in two groups: hello"):
        Dispatcher([Group(), Group()])


# What a daemon started by a question does not import before it answers (rpc/wiring.py's
# later and on-call groups, services.py's upkeep, trust and forget catch-up): the jobs, git
# sync, the lifecycle's changes, fleet, status's report, recall, the workspaces' methods,
# append.
DEFERRED = (
    "memoryd.rpc.status",
    "memoryd.rpc.recall_methods",
    "memoryd.rpc.workspace_methods",
    "memoryd.files.append",
    "memoryd.jobs.session_trust",
    "memoryd.lifecycle.journal",
    "memoryd.rpc.agent_methods",
    "memoryd.rpc.job_methods",
    "memoryd.rpc.lifecycle_methods",
    "memoryd.rpc.review_methods",
    "memoryd.rpc.sync_methods",
    "memoryd.jobs.scheduler",
    "memoryd.jobs.runner",
    "memoryd.jobs.registry",
    "memoryd.sync.service",
    "memoryd.lifecycle.forget_service",
    "memoryd.lifecycle.forget_run",
    "memoryd.lifecycle.forget",
    "memoryd.lifecycle.archive",
    "memoryd.fleet.service",
    "croniter",
)


def test_the_daemon_module_imports_none_of_what_a_first_answer_does_not_use() -> None:
    code = (
        "import sys, memoryd.cli, memoryd.app; "
        f"print(' '.join(m for m in {DEFERRED!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == []


def test_a_later_group_is_made_once_by_the_first_request_for_one_of_its_methods() -> None:
    async def answer(p: Params, req: Request) -> dict[str, Any]:
        return {"method": req.method}

    class Group:
        def __init__(self, *names: str) -> None:
            self.names = names

        def table(self) -> dict[str, Handler]:
            return dict.fromkeys(self.names, answer)

    made: list[str] = []

    def later() -> list[Group]:
        made.append("later")
        return [Group("jobs.list")]

    d = Dispatcher([Group("hello")], later)

    async def ask(method: str) -> dict[str, Any]:
        out = await d.dispatch(Request(id=1, method=method, params={}, emit=lambda e, d: None))
        return out.message

    assert asyncio.run(ask("hello"))["result"] == {"method": "hello"}
    assert made == []  # a first method of the first groups makes nothing more
    assert asyncio.run(ask("jobs.list"))["result"] == {"method": "jobs.list"}
    assert asyncio.run(ask("nope"))["error"]["code"] == "unknown_method"
    assert made == ["later"]
    assert set(d.table) == {"hello", "jobs.list"}


def test_a_later_group_that_fails_to_be_made_answers_internal_and_is_tried_again() -> None:
    async def answer(p: Params, req: Request) -> dict[str, Any]:
        return {"method": req.method}

    class Group:
        def table(self) -> dict[str, Handler]:
            return {"jobs.list": answer}

    tries: list[int] = []

    def later() -> list[Group]:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("a group could not be made")
        return [Group()]

    d = Dispatcher([], later)

    async def ask(method: str) -> dict[str, Any]:
        out = await d.dispatch(Request(id=7, method=method, params={}, emit=lambda e, d: None))
        return out.message

    first = asyncio.run(ask("jobs.list"))  # an answer on the connection, not a dropped one
    assert first["id"] == 7 and first["error"]["code"] == "internal"
    assert "a group could not be made" in first["error"]["message"]
    assert asyncio.run(ask("jobs.list"))["result"] == {"method": "jobs.list"}
    assert len(tries) == 2


class _Named:
    def __init__(self, *names: str) -> None:
        self.names = names

    async def answer(self, p: Params, req: Request) -> dict[str, Any]:
        return {"method": req.method}

    def table(self) -> dict[str, Handler]:
        return dict.fromkeys(self.names, self.answer)


def _ask(d: Dispatcher, method: str) -> dict[str, Any]:
    req = Request(id=3, method=method, params={}, emit=lambda e, d: None)
    return asyncio.run(d.dispatch(req)).message


def test_an_on_call_group_is_made_alone_by_the_first_request_for_one_of_its_methods() -> None:
    made: list[str] = []

    def group(*names: str) -> OnCall:
        def make() -> _Named:
            made.append(names[0])
            return _Named(*names)

        return OnCall(frozenset(names), make)

    later: list[str] = []
    d = Dispatcher(
        [_Named("hello")],
        lambda: later.append("later") or [_Named("jobs.list")],
        [group("recall", "stats"), group("workspace.list")],
    )
    assert _ask(d, "stats")["result"] == {"method": "stats"}
    assert _ask(d, "recall")["result"] == {"method": "recall"}
    assert made == ["recall"] and later == []  # neither the other group nor the later ones
    assert _ask(d, "jobs.list")["result"] == {"method": "jobs.list"}
    assert later == ["later"] and made == ["recall"]
    d.load_later()  # what the daemon does once it has answered: the rest
    assert made == ["recall", "workspace.list"]
    assert set(d.table) == {"hello", "recall", "stats", "workspace.list", "jobs.list"}


def test_an_on_call_group_that_cannot_be_made_answers_its_request_and_is_tried_again() -> None:
    tries: list[int] = []

    def make() -> _Named:
        tries.append(1)
        if len(tries) < 3:
            import memoryd.rpc.no_such_module  # type: ignore[import-not-found]  # noqa: F401
        return _Named("recall")

    d = Dispatcher([_Named("hello")], None, [OnCall(frozenset({"recall"}), make)])
    first = _ask(d, "recall")  # an answer on the connection, not a dropped one
    assert first["id"] == 3 and first["error"]["code"] == "internal"
    assert "No module named 'memoryd.rpc.no_such_module'" in first["error"]["message"]
    assert _ask(d, "hello")["result"] == {"method": "hello"}  # the rest is served
    d.load_later()  # logged, not raised: the daemon's start goes on
    assert _ask(d, "recall")["result"] == {"method": "recall"}
    assert len(tries) == 3


def test_an_on_call_group_must_answer_the_methods_it_was_named_with() -> None:
    d = Dispatcher([], None, [OnCall(frozenset({"recall", "stats"}), lambda: _Named("recall"))])
    wrong = _ask(d, "recall")
    assert wrong["error"]["code"] == "internal"
    assert "_Named answers ['recall'], not ['recall', 'stats']" in wrong["error"]["message"]
    with pytest.raises(ValueError, match="methods in two groups: hello"):
        Dispatcher([_Named("hello")], None, [OnCall(frozenset({"hello"}), lambda: _Named())])


def test_each_handler_group_takes_its_pieces_by_name_never_the_daemon_or_a_bag() -> None:
    groups = []
    for path in sorted(RPC.glob("*_methods.py")):
        module = importlib.import_module(f"memoryd.rpc.{path.stem}")
        groups += [
            cls
            for name, cls in vars(module).items()
            if inspect.isclass(cls)
            and name.endswith("Methods")
            and cls.__module__ == module.__name__
        ]
    assert len(groups) >= 8
    bags = ("Daemon", "Services", "Dispatcher", "Methods", "DaemonParts")
    for cls in groups:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert params, cls
        for p in params:
            assert p.kind is inspect.Parameter.KEYWORD_ONLY, (cls.__name__, p.name)
            annotation = str(p.annotation)
            assert not any(re.search(rf"\b{b}\b", annotation) for b in bags), (
                cls.__name__,
                p.name,
                annotation,
            )
