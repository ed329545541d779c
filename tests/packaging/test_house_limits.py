"""The house's size rules (docs/architecture.md): no module over 600 lines and no function
over 80, in the daemon and the client. A module that grows past them is split by what it
holds, not trimmed to fit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (ROOT / "daemon" / "memoryd", ROOT / "client" / "memoryd_client")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in pkg.rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_no_module_is_over_600_lines(package: Path) -> None:
    over = {
        str(p.relative_to(ROOT)): n
        for p in package.rglob("*.py")
        if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES
    }
    assert not over, f"split these by what they hold: {over}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_no_function_is_over_80_lines(package: Path) -> None:
    over: dict[str, int] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    over[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert not over, f"split these: {over}"


def test_the_packages_are_where_the_rules_look() -> None:
    assert all(p.is_dir() for p in PACKAGES) and len(_modules()) > 100
