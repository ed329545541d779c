"""The README's first steps work as written, as a newcomer types them: an empty HOME, the
venv the install line made (not activated: its bin/ is not on PATH), the daemon started by
the install line itself, then the "A workspace" and "Search" blocks run verbatim in bash,
and `.venv/bin/memoryd stop`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import short_home, wait_for

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent


def readme_block(section: str) -> str:
    """The first ```bash block under the README's ``## section`` heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```bash\n(.*?)```", body, re.S)
    assert found, f"no bash block under ## {section}"
    return found.group(1)


@pytest.fixture
def newcomer() -> Iterator[tuple[Path, dict[str, str]]]:
    """A folder holding the install's .venv, and a shell's environment with an empty HOME."""
    with short_home() as root:
        (root / "repo").mkdir()
        (root / "repo" / ".venv").symlink_to(VENV)
        (root / "home").mkdir()
        venv_bin = str(VENV / "bin")
        path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":") if p != venv_bin]
        env = {
            "PATH": ":".join(path),
            "HOME": str(root / "home"),
            "LANG": "C.UTF-8",
            "MEMORYD_EMBEDDING_PROVIDER": "none",  # the model is not what this pins
        }
        yield root / "repo", env


def test_the_readmes_first_steps_run_as_written_on_an_empty_home(
    newcomer: tuple[Path, dict[str, str]],
) -> None:
    repo, env = newcomer
    install = readme_block("Install").strip().splitlines()[0]
    assert install.endswith("&& .venv/bin/memoryd run"), install
    run = subprocess.Popen(
        [".venv/bin/memoryd", "run"],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def shell(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        assert wait_for(lambda: shell(".venv/bin/memctl status").returncode == 0, 30, 0.2)
        workspace = shell(readme_block("A workspace"))
        assert workspace.returncode == 0, workspace.stderr
        assert "added workspace alice" in workspace.stdout
        search = shell(readme_block("A workspace") + readme_block("Search"))
        assert search.returncode == 0, search.stderr
        assert search.stdout.count("Decided: keep SQLite for the schema") >= 2, search.stdout
    finally:
        stop = shell(".venv/bin/memoryd stop")
        if run.poll() is None:
            run.kill()
        run.wait(30)
    assert stop.returncode == 0 and "memoryd stopped" in stop.stdout, stop.stdout + stop.stderr
