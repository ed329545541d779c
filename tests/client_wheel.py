"""memoryd-client installed the way a user installs it: a wheel built from ``client/`` into a
fresh virtual environment, with nothing of the checkout on any path (the agent tests run
``memctl`` from there: its OpenClaw plugin, its Hermes provider, its hooks).

The wheel is built from a copy of ``client/`` (links followed, as a wheel copies them), so
parallel test workers never share setuptools' build folder in the checkout.

    python tests/client_wheel.py DEST    # prints the venv's bin folder (the OpenClaw e2e)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

CLIENT = Path(__file__).resolve().parent.parent / "client"
_SKIP = shutil.ignore_patterns(
    "build", "dist", "*.egg-info", "__pycache__", "node_modules", "test", "package-lock.json"
)


def build_wheel(dest: Path) -> Path:
    """The client's wheel, built into ``dest``."""
    source = dest / "client-src"
    shutil.copytree(CLIENT, source, symlinks=False, ignore=_SKIP)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(source)],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(source)
    [wheel] = dest.glob("memoryd_client-*.whl")
    return wheel


def fresh_venv(dest: Path) -> Path:
    """A new venv at ``dest/venv`` with the client's wheel installed; its bin folder."""
    dest.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(dest)
    venv.EnvBuilder().create(dest / "venv")  # no pip of its own: this pip installs into it
    bin_dir = dest / "venv" / "bin"
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python")]
    quiet = ["-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", *quiet, str(wheel)], check=True, capture_output=True)
    return bin_dir


if __name__ == "__main__":
    print(fresh_venv(Path(sys.argv[1])))
