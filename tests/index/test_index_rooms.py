"""index/ runs one way down: its rooms (each file, and keyword/, vectors/, search/) import
each other without circles, but for the one pair named below.

A room imported by another room that it imports itself, even through a third, has a shared
definition in the wrong place: move it to a leaf both import (row_codes.py, keyword/text.py,
embeddings/base.py hold the ones moved so far). Imports under ``if TYPE_CHECKING:`` are for
the type checker only and are left out.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import memoryd.index

INDEX = Path(memoryd.index.__file__).parent
PACKAGE = "memoryd.index"
# store.py writes through the vector copy, and the embedder writes through store.py: the
# writer's two halves. Known, and left for a later step.
KNOWN = {("store", "vectors"), ("vectors", "store")}


def room_of(module: str) -> str:
    return module[len(PACKAGE) + 1 :].split(".")[0]


def imported(tree: ast.Module) -> list[str]:
    typing_only = {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and ast.unparse(branch.test).endswith("TYPE_CHECKING")
        for stmt in branch.body
        for node in ast.walk(stmt)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found += [f"{PACKAGE}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def room_arrows() -> dict[tuple[str, str], set[str]]:
    rooms = {p.name.removesuffix(".py") for p in INDEX.iterdir() if p.name != "__init__.py"}
    arrows: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in INDEX.rglob("*.py"):
        source = path.relative_to(INDEX).parts[0].removesuffix(".py")
        for module in imported(ast.parse(path.read_text(encoding="utf-8"))):
            if module.startswith(PACKAGE + "."):
                target = room_of(module)
                if target in rooms and target != source:
                    arrows[(source, target)].add(f"{path.relative_to(INDEX)} imports {module}")
    return arrows


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    todo, seen = [start], set()
    while todo:
        room = todo.pop()
        if room == goal:
            return True
        if room not in seen:
            seen.add(room)
            todo.extend(graph[room])
    return False


def test_no_room_of_index_imports_a_room_that_imports_it_back() -> None:
    arrows = room_arrows()
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in arrows:
        graph[source].add(target)
    circling = {pair for pair in arrows if reaches(graph, pair[1], pair[0])}
    new = sorted(line for pair in circling - KNOWN for line in arrows[pair])
    assert not new, "index/ rooms import each other in a circle:\n" + "\n".join(new)


def test_the_room_check_sees_a_circle_through_a_third_room() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    graph["keyword"] = {"vectors"}
    graph["vectors"] = {"search"}
    graph["search"] = {"keyword"}
    assert reaches(graph, "search", "keyword") and not reaches(graph, "keyword", "store")
