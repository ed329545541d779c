"""The unit files and the plist, as rendered for this installation: checked key by key,
by ``systemd-analyze verify`` where it is installed, and with plistlib."""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from memoryd.exit_codes import EXIT_ALREADY_RUNNING, EXIT_CONFIG
from memoryd.service.manager import WriteFile, launchd_install
from memoryd.service.render import (
    LAUNCHD_LABEL,
    SERVICE_UNIT,
    SOCKET_UNIT,
    SYSTEMD_SOCKET,
    TEMPLATE_FOLDERS,
    TEMPLATES,
    RenderError,
    fill,
    find_memoryd,
    render_launchd_plist,
    render_systemd_service,
    render_systemd_socket,
    template,
)
from memoryd_client.paths import default_paths

ROOT = Path(__file__).resolve().parents[2]
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def unit_entries(text: str) -> dict[str, list[tuple[str, str]]]:
    """A systemd unit as {section: [(key, value), ...]}: keys may repeat, order is kept."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"key outside a section: {line}"
        assert "=" in line and not raw.endswith("\\"), f"not KEY=value: {line}"
        key, value = line.split("=", 1)
        assert " #" not in value, f"systemd has no trailing comments: {line}"
        current.append((key.strip(), value.strip()))
    return sections


def one(entries: list[tuple[str, str]], key: str) -> str:
    values = [v for k, v in entries if k == key]
    assert len(values) == 1, f"{key}: {values}"
    return values[0]


@pytest.fixture
def exe() -> Path:
    return find_memoryd()


def test_the_templates_live_at_the_top_level_only_and_the_checkout_renders_them() -> None:
    # Their one home: systemd/ and launchd/ (the wheel's copy is built from them: packaging
    # tests). The package holds no copy that could drift, and a checkout renders these.
    assert {p.name for p in (ROOT / "systemd").iterdir()} == {SERVICE_UNIT, SOCKET_UNIT}
    assert {p.name for p in (ROOT / "launchd").iterdir()} == {f"{LAUNCHD_LABEL}.plist"}
    assert not (ROOT / "daemon" / "memoryd" / "service" / "templates").exists()
    for name in TEMPLATES:
        assert template(name) == (ROOT / TEMPLATE_FOLDERS[name] / name).read_text("utf-8")


def test_the_installed_memoryd_is_found_as_an_absolute_executable(exe: Path) -> None:
    assert exe.is_absolute() and exe.name == "memoryd"
    assert os.access(exe, os.X_OK) and stat.S_ISREG(exe.stat().st_mode)
    with pytest.raises(RenderError, match="cannot find the `memoryd` executable"):
        find_memoryd("/nonexistent/bin/python", which=lambda name: None)


def test_service_unit_key_by_key(exe: Path) -> None:
    units = unit_entries(render_systemd_service(exe))
    unit, service, install = units["Unit"], units["Service"], units["Install"]
    assert one(service, "Type") == "notify"
    argv = one(service, "ExecStart").split()
    assert argv == [str(exe), "run", "--socket", SYSTEMD_SOCKET]
    assert Path(argv[0]).is_file() and os.access(argv[0], os.X_OK)
    assert one(service, "Environment") == f'"PATH={exe.parent}:/usr/local/bin:/usr/bin:/bin"'
    # Restart on a crash with a back-off, not in a loop, not for errors a restart repeats.
    assert one(service, "Restart") == "on-failure"
    assert one(service, "RestartSec") == "2s"
    assert one(unit, "StartLimitIntervalSec") == "120" and one(unit, "StartLimitBurst") == "5"
    assert one(service, "RestartPreventExitStatus").split() == [
        str(EXIT_CONFIG),
        str(EXIT_ALREADY_RUNNING),
    ]
    assert one(service, "WatchdogSec") == "2min"
    assert one(service, "LimitNOFILE") == "65536"  # a thousand idle clients fit
    assert one(service, "RuntimeDirectory") == "memoryd"
    assert one(service, "RuntimeDirectoryMode") == "0700"
    # Hardening that leaves the daemon its job: home writable, the rest read-only.
    for key, value in {
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
        "PrivateUsers": "yes",
        "ProtectSystem": "strict",
        "ReadWritePaths": "%h",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "yes",
        "RestrictRealtime": "yes",
        "RestrictSUIDSGID": "yes",
    }.items():
        assert one(service, key) == value, key
    assert one(service, "RestrictAddressFamilies").split() == ["AF_UNIX", "AF_INET", "AF_INET6"]
    assert not [
        k
        for k, _ in service
        if k in ("ProtectHome", "InaccessiblePaths", "ReadOnlyPaths", "TemporaryFileSystem")
    ]
    assert one(install, "WantedBy") == "default.target"


def test_socket_unit_key_by_key() -> None:
    units = unit_entries(render_systemd_socket())
    sock = units["Socket"]
    assert one(sock, "ListenStream") == SYSTEMD_SOCKET == "%t/memoryd/memoryd.sock"
    assert one(sock, "SocketMode") == "0600" and one(sock, "DirectoryMode") == "0700"
    assert not [k for k, _ in sock if k in ("Accept", "Service", "RemoveOnStop")]
    assert one(units["Install"], "WantedBy") == "sockets.target"


def test_the_units_socket_is_where_clients_look_by_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    expected = Path(SYSTEMD_SOCKET.replace("%t", str(tmp_path)))
    assert Path(platformdirs.user_runtime_dir("memoryd")) / "memoryd.sock" == expected
    assert default_paths({"XDG_RUNTIME_DIR": str(tmp_path)}).socket == expected


@needs_analyze
@pytest.mark.parametrize("mode", ["--system", "--user"])
def test_rendered_units_pass_systemd_analyze_verify(exe: Path, tmp_path: Path, mode: str) -> None:
    (tmp_path / SERVICE_UNIT).write_text(render_systemd_service(exe))
    (tmp_path / SOCKET_UNIT).write_text(render_systemd_socket())
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    done = subprocess.run(
        [str(ANALYZE), mode, "verify", "--man=no", f"./{SERVICE_UNIT}", f"./{SOCKET_UNIT}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "", done


@needs_analyze
def test_an_executable_path_with_spaces_and_percent_signs_survives_systemd(
    exe: Path, tmp_path: Path
) -> None:
    odd = tmp_path / "my venv 100%" / "bin" / "memoryd"
    odd.parent.mkdir(parents=True)
    shutil.copy(exe, odd)
    unit = render_systemd_service(odd)
    assert '"' in one(unit_entries(unit)["Service"], "ExecStart")
    (tmp_path / SERVICE_UNIT).write_text(unit)
    done = subprocess.run(
        [str(ANALYZE), "verify", "--man=no", f"./{SERVICE_UNIT}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done  # it found the file


@needs_analyze
def test_systemd_analyze_catches_what_the_key_checks_would_miss(tmp_path: Path) -> None:
    # The verify test above can fail: a unit naming a missing executable does not pass.
    (tmp_path / SERVICE_UNIT).write_text(render_systemd_service(tmp_path / "missing"))
    done = subprocess.run(
        [str(ANALYZE), "verify", "--man=no", f"./{SERVICE_UNIT}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "missing" in done.stderr


def test_unknown_placeholders_are_a_template_bug() -> None:
    with pytest.raises(RenderError, match="@NOPE@"):
        fill("ExecStart=@NOPE@", {})


def rendered_plist(exe: Path, home: Path, socket_activation: bool) -> tuple[Path, dict[str, Any]]:
    socket = home / "Library" / "Caches" / "TemporaryItems" / "memoryd" / "memoryd.sock"
    plan = launchd_install(
        exe, home, 501, socket, home / "Library" / "Logs" / "memoryd", socket_activation
    )
    [write] = [s for s in plan.steps if isinstance(s, WriteFile)]
    return write.path, plistlib.loads(write.text.encode())


def test_plist_key_by_key(exe: Path, tmp_path: Path) -> None:
    path, data = rendered_plist(exe, tmp_path, socket_activation=False)
    assert path == tmp_path / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    assert data["Label"] == LAUNCHD_LABEL == path.stem
    assert LAUNCHD_LABEL.count(".") >= 2  # reverse DNS
    program = data["ProgramArguments"]
    assert program[1:3] == ["run", "--socket"]
    assert Path(program[0]) == exe and os.access(program[0], os.X_OK)
    assert program[3].endswith("/memoryd/memoryd.sock")
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}  # a crash restarts, a clean exit not
    assert data["ProcessType"] == "Background"
    logs = tmp_path / "Library" / "Logs" / "memoryd"
    assert data["StandardOutPath"] == data["StandardErrorPath"] == str(logs / "memoryd.log")
    env = data["EnvironmentVariables"]
    assert env["PATH"].split(":")[0] == str(exe.parent)
    assert "/usr/bin" in env["PATH"].split(":")
    assert "Sockets" not in data
    assert not any("@" in str(v) for v in data.values())  # every placeholder filled in


def test_plist_with_socket_activation_lets_launchd_listen(exe: Path, tmp_path: Path) -> None:
    _, data = rendered_plist(exe, tmp_path, socket_activation=True)
    program = data["ProgramArguments"]
    assert data["Sockets"] == {
        "Listeners": {
            "SockPathName": program[3],
            "SockPathMode": 0o600,
            "SockType": "stream",
            "SockFamily": "Unix",
        }
    }
    assert data["RunAtLoad"] is False  # started by the first connection
    assert data["KeepAlive"] == {"SuccessfulExit": False}


def test_plist_refuses_control_characters_in_paths(exe: Path, tmp_path: Path) -> None:
    with pytest.raises(RenderError, match="control character"):
        render_launchd_plist(exe, tmp_path / "a\nb.sock", tmp_path / "log")
