"""runtime/bytecode: what ``memoryd run`` imported before it let bytecode be written is
cached after its first answer, when missing or stale, as an import would cache it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

RUN = """
import json, sys
import pkgx.mod
from memoryd.runtime import bytecode
bytecode.note_early()
sys.dont_write_bytecode = False
print(json.dumps(sorted(n for n in bytecode.cache_early() if n.startswith("pkgx"))))
"""


def _run(tmp_path: Path) -> list[str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    out = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, check=True
    )
    written: list[str] = json.loads(out.stdout)
    return written


def test_modules_imported_before_are_cached_once_and_again_after_an_edit(tmp_path: Path) -> None:
    pkg = tmp_path / "pkgx"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("VALUE = 1\n")
    assert _run(tmp_path) == ["pkgx", "pkgx.mod"]
    cached = list((pkg / "__pycache__").glob("mod.*.pyc"))
    assert len(cached) == 1
    assert _run(tmp_path) == []  # fresh: nothing compiled again
    (pkg / "mod.py").write_text("VALUE = 22\n")  # another size: stale
    assert _run(tmp_path) == ["pkgx.mod"]
    assert _run(tmp_path) == []


def test_nothing_is_written_while_bytecode_may_not_be(tmp_path: Path) -> None:
    code = (
        "import sys; sys.dont_write_bytecode = True; from memoryd.runtime import bytecode; "
        "bytecode.note_early(); print(bytecode.cache_early())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
