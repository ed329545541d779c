"""The two distributions: the thin client installs alone, the daemon depends on it.

The wheels are built as pip builds them for users, from a copy of the sources (setuptools
writes build/ and *.egg-info next to them), without build isolation: the dev extra brings
setuptools, so nothing is fetched for the build.
"""

from __future__ import annotations

import email.parser
import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import memoryd
import memoryd_client
from memoryd.service.render import (
    SERVICE_UNIT,
    SOCKET_UNIT,
    TEMPLATES,
    find_memoryd,
    render_systemd_service,
    render_systemd_socket,
)

ROOT = Path(__file__).resolve().parents[2]


def _build_wheel(project: Path, out: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(out),
            str(project),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode())


def _entry_points(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
        return zf.read(names[0]).decode() if names else ""


def _files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if ".dist-info/" not in n}


def _copy_sources(dest: Path) -> None:
    """What the two builds read: each pyproject.toml and README.md, the packages, and the
    daemon's setup.py with the unit templates it ships (systemd/, launchd/)."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".*")
    for project in (Path(), Path("client")):
        (dest / project).mkdir(exist_ok=True)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / project / name, dest / project / name)
    shutil.copy2(ROOT / "setup.py", dest / "setup.py")
    for folder in ("daemon", "systemd", "launchd"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=skip)
    shutil.copytree(
        ROOT / "client" / "memoryd_client", dest / "client" / "memoryd_client", ignore=skip
    )


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    src = tmp_path_factory.mktemp("src")
    _copy_sources(src)
    out = tmp_path_factory.mktemp("wheels")
    (out / "client").mkdir()
    (out / "daemon").mkdir()
    return {
        "client": _build_wheel(src / "client", out / "client"),
        "daemon": _build_wheel(src, out / "daemon"),
    }


def test_client_wheel_declares_msgpack_and_platformdirs_only_and_mcp_as_an_extra(
    wheels: dict[str, Path],
) -> None:
    meta = _metadata(wheels["client"])
    assert meta["Name"] == "memoryd-client"
    assert meta["Version"] == memoryd_client.__version__
    requires = meta.get_all("Requires-Dist") or []
    plain = sorted(r.split(">")[0].split("=")[0].strip() for r in requires if "extra" not in r)
    assert plain == ["msgpack", "platformdirs"]
    extras = [r for r in requires if "extra" in r]
    assert extras and all(r.startswith("uvicorn") and 'extra == "mcp"' in r for r in extras)
    assert meta.get_all("Provides-Extra") == ["mcp"]
    assert "memctl = memoryd_client._memctl:main" in _entry_points(wheels["client"])
    assert {f.split("/")[0] for f in _files(wheels["client"])} == {"memoryd_client"}


def test_daemon_wheel_depends_on_the_client_and_owns_none_of_its_files(
    wheels: dict[str, Path],
) -> None:
    meta = _metadata(wheels["daemon"])
    assert meta["Name"] == "memoryd"
    assert meta["Version"] == memoryd.__version__
    requires = meta.get_all("Requires-Dist") or []
    assert f"memoryd-client=={memoryd_client.__version__}" in requires
    daemon_files = _files(wheels["daemon"])
    assert not daemon_files & _files(wheels["client"])
    assert {f.split("/")[0] for f in daemon_files} == {"memoryd"}
    assert "memoryd/fleet/scratch.py" not in daemon_files  # the tests' Postgres stays there
    assert "memoryd/fleet/service.py" in daemon_files
    entry_points = _entry_points(wheels["daemon"])
    assert "memoryd = memoryd.cli:main" in entry_points
    assert "memctl" not in entry_points  # one owner per script too


def test_the_wheel_ships_exactly_the_top_level_units_and_service_install_renders_them(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    """systemd/ and launchd/ (the templates' one home), the wheel's memoryd/service/templates/
    and what `memoryd service install` of the installed wheel writes all agree."""
    packaged = "memoryd/service/templates/"
    with zipfile.ZipFile(wheels["daemon"]) as zf:
        shipped = {n[len(packaged) :]: zf.read(n) for n in zf.namelist() if n.startswith(packaged)}
        zf.extractall(tmp_path / "wheel")
    top = {
        p.name: p.read_bytes()
        for folder in ("systemd", "launchd")
        for p in (ROOT / folder).iterdir()
    }
    assert set(top) == set(TEMPLATES)
    assert shipped == top
    # The installed wheel's memoryd (not this checkout's), with this venv's dependencies.
    script = (
        "import sys, memoryd; assert memoryd.__file__.startswith(sys.argv[1]), memoryd.__file__; "
        "from memoryd.cli import main; sys.exit(main(sys.argv[2:]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEMORYD_"))}
    env |= {"PYTHONPATH": str(tmp_path / "wheel"), "HOME": str(tmp_path)}
    argv = [sys.executable, "-c", script, str(tmp_path / "wheel"), "service", "install"]
    done = subprocess.run(
        [*argv, "--socket-activation", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    unit_dir = tmp_path / ".config" / "systemd" / "user"
    for name, text in (
        (SERVICE_UNIT, render_systemd_service(find_memoryd())),
        (SOCKET_UNIT, render_systemd_socket()),
    ):
        assert f"# write {unit_dir / name}\n{text.rstrip()}\n" in done.stdout


def test_client_wheel_installs_alone_in_a_fresh_venv_and_memctl_runs(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["MEMORYD_HOME"] = str(tmp_path / "home")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(wheels["client"])],
        check=True,
        capture_output=True,
        timeout=300,
        env=env,
    )
    # cwd: the source tree's memoryd.egg-info would be found on sys.path ('' for -c).
    listing = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'].lower() "
            "for d in m.distributions()]))",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    installed = set(json.loads(listing.stdout)) - {"pip", "setuptools", "wheel"}
    assert installed == {"memoryd-client", "msgpack", "platformdirs"}
    version = subprocess.run(
        [str(env_dir / "bin" / "memctl"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert version.returncode == 0, version.stderr
    assert memoryd_client.__version__ in version.stdout
    status = subprocess.run(
        [str(env_dir / "bin" / "memctl"), "status"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert status.returncode == 3, status.stderr  # not running: the daemon is not installed
    assert "not running" in status.stderr
