"""The unit's sandbox, applied for real: the daemon runs and answers searches under
MemoryDenyWriteExecute=yes and RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6, and (as
root, where mount namespaces are allowed) under ProtectSystem=strict with only the home and
runtime folders writable and a private /tmp.

There is no systemd here to apply the unit, so this file installs the same seccomp filter
systemd installs for those two settings (src/shared/seccomp-util.c: mmap with PROT_WRITE
and PROT_EXEC together, any mprotect/pkey_mprotect adding PROT_EXEC and shmat with SHM_EXEC
fail with EPERM; socket() outside the allowed families fails with EAFNOSUPPORT), plus the
kernel's own W^X switch, prctl(PR_SET_MDWE), where the kernel has it (Linux 6.3+). Run as a
script it applies them and execs its arguments: ``python test_service_sandbox.py CMD...``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import memoryd

# x86-64 and arm64: (AUDIT_ARCH_*, mmap, mprotect, pkey_mprotect, shmat, socket)
ARCHES = {
    "x86_64": (0xC000003E, 9, 10, 329, 30, 41),
    "aarch64": (0xC00000B7, 222, 226, 288, 196, 198),
}
PROT_WRITE, PROT_EXEC, SHM_EXEC = 0x2, 0x4, 0o100000
ALLOWED_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
LD_ABS_W, JEQ_K, JSET_K, AND_K, RET_K = 0x20, 0x15, 0x45, 0x54, 0x06
NR, ARCH, ARG0, ARG2 = 0, 4, 16, 32  # offsets in struct seccomp_data (little endian)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1

Insn = tuple[int, int, str, str] | tuple[int, int] | str  # (op, k[, if true, if false]) | label


def assemble(code: Sequence[Insn]) -> list[bytes]:
    """Classic BPF with labels instead of jump offsets."""
    labels: dict[str, int] = {}
    for item in code:
        if isinstance(item, str):
            labels[item] = sum(1 for i in code[: code.index(item)] if not isinstance(i, str))
    out: list[bytes] = []
    for item in code:
        if isinstance(item, str):
            continue
        op, k, *jumps = item
        here = len(out)
        jt, jf = (labels[jumps[0]] - here - 1, labels[jumps[1]] - here - 1) if jumps else (0, 0)
        out.append(struct.pack("=HBBI", op, jt, jf, k))
    return out


def filter_program(machine: str) -> list[bytes]:
    arch, mmap, mprotect, pkey_mprotect, shmat, sock = ARCHES[machine]
    wx = PROT_WRITE | PROT_EXEC
    return assemble(
        [
            (LD_ABS_W, ARCH),
            (JEQ_K, arch, "native", "allow"),
            "native",
            (LD_ABS_W, NR),
            (JEQ_K, mmap, "mmap", "1"),
            "1",
            (JEQ_K, mprotect, "mprotect", "2"),
            "2",
            (JEQ_K, pkey_mprotect, "mprotect", "3"),
            "3",
            (JEQ_K, shmat, "shmat", "4"),
            "4",
            (JEQ_K, sock, "socket", "allow"),
            "mmap",
            (LD_ABS_W, ARG2),
            (AND_K, wx),
            (JEQ_K, wx, "eperm", "allow"),
            "mprotect",
            (LD_ABS_W, ARG2),
            (JSET_K, PROT_EXEC, "eperm", "allow"),
            "shmat",
            (LD_ABS_W, ARG2),
            (JSET_K, SHM_EXEC, "eperm", "allow"),
            "socket",
            (LD_ABS_W, ARG0),
            (JEQ_K, ALLOWED_FAMILIES[0], "allow", "f1"),
            "f1",
            (JEQ_K, ALLOWED_FAMILIES[1], "allow", "f2"),
            "f2",
            (JEQ_K, ALLOWED_FAMILIES[2], "allow", "eafnosupport"),
            "allow",
            (RET_K, RET_ALLOW),
            "eperm",
            (RET_K, RET_ERRNO | errno.EPERM),
            "eafnosupport",
            (RET_K, RET_ERRNO | errno.EAFNOSUPPORT),
        ]
    )


def apply_sandbox() -> bool:
    """NoNewPrivileges, the seccomp filter, and PR_SET_MDWE when the kernel has it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    code = b"".join(filter_program(platform.machine()))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    prog = SockFprog(len(code) // 8, code)
    for option, arg, ptr in (
        (PR_SET_NO_NEW_PRIVS, 1, None),
        (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog)),
    ):
        if libc.prctl(option, arg, ptr, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}) failed")
    return bool(libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, None, 0, 0) == 0)


if __name__ == "__main__":
    kernel_mdwe = apply_sandbox()
    os.environ["TEST_KERNEL_MDWE"] = str(int(kernel_mdwe))
    os.execv(sys.argv[1], sys.argv[1:])

# -- the tests ---------------------------------------------------------------------------

from daemon_util import short_home  # noqa: E402 - the script above needs none of this
from fakes.openai_server import FakeOpenAIServer  # noqa: E402
from memoryd.exit_codes import EXIT_OK  # noqa: E402
from memoryd_client import MemoryClient  # noqa: E402

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or platform.machine() not in ARCHES,
        reason="seccomp filter written for Linux x86-64 and arm64",
    ),
]
SANDBOX = [sys.executable, __file__]


def sandboxed(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SANDBOX, sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )


def test_the_filter_refuses_writable_executable_memory_and_other_socket_families() -> None:
    # The controls: without them, the daemon tests below would prove nothing.
    done = sandboxed(
        "import errno, mmap, socket\n"
        "try:\n"
        "    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "    print('wx allowed')\n"
        "except PermissionError:\n"
        "    print('wx refused')\n"
        "mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE)\n"
        "try:\n"
        "    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)\n"
        "    print('netlink allowed')\n"
        "except OSError as e:\n"
        "    print('netlink refused' if e.errno == errno.EAFNOSUPPORT else e)\n"
        "socket.socket(socket.AF_UNIX).close(); socket.socket(socket.AF_INET6).close()\n"
        "# AI_ADDRCONFIG makes glibc list the interfaces over netlink; refused, it carries on\n"
        "print(len(socket.getaddrinfo('localhost', 80, flags=socket.AI_ADDRCONFIG)) > 0)\n"
        "print(open('/proc/self/status').read().count('NoNewPrivs:\\t1'))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["wx", "refused", "netlink", "refused", "True", "1"]


@pytest.fixture
def home() -> Iterator[Path]:
    with short_home() as h:
        yield h


def run_sandboxed_daemon(home: Path, config: str) -> None:
    """The daemon under the sandbox: start, index a workspace, answer a vector search."""
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe cat is called Pixel and likes boxes.\n")
    (ws / "memory" / "2024-05-01.md").write_text("# Notes\n\nWe chose SQLite for storage.\n")
    (home / "config.toml").write_text(config + f'\n[[workspaces]]\npath = "{ws}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["MEMORYD_HOME"] = str(home)
    log = home / "daemon.log"
    with open(log, "wb") as err:
        daemon = subprocess.Popen(
            [*SANDBOX, sys.executable, "-m", "memoryd.cli", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        with MemoryClient(home / "run" / "memoryd.sock", timeout=120, autostart=False) as c:
            _wait_for_socket(home / "run" / "memoryd.sock", daemon, log)
            status = Path(f"/proc/{daemon.pid}/status").read_text()
            assert "NoNewPrivs:\t1" in status and "Seccomp:\t2" in status  # filtered
            c.reindex(wait=True)
            found = c.search("what is the cat called", mode="vector")
            assert found.mode_used == "vector", found
            assert found.results and found.results[0].path == "MEMORY.md", found
            c.append("Decided: the daemon runs under a W^X sandbox")
            assert (
                "W^X"
                in (ws / "memory")
                .joinpath(sorted(p.name for p in (ws / "memory").iterdir())[-1])
                .read_text()
            )
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(30) == EXIT_OK, log.read_text()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    text = log.read_text()
    assert "Operation not permitted" not in text and "Traceback" not in text, text


def _wait_for_socket(path: Path, daemon: subprocess.Popen[bytes], log: Path) -> None:
    from daemon_util import accepts, wait_for

    assert wait_for(lambda: accepts(path) or daemon.poll() is not None, 60)
    assert daemon.poll() is None, log.read_text()


def test_daemon_with_a_remote_embedding_endpoint_works_in_the_sandbox(home: Path) -> None:
    with FakeOpenAIServer() as server:
        # A host name, so that name resolution runs inside the sandbox too.
        base = server.base_url.replace("127.0.0.1", "localhost")
        run_sandboxed_daemon(home, f'[embedding]\nprovider = "openai"\nbase_url = "{base}"\n')
        assert any(r.path.endswith("/embeddings") for r in server.requests)


@pytest.mark.model
def test_daemon_with_the_local_onnx_model_works_in_the_sandbox(home: Path) -> None:
    # onnxruntime's CPU kernels are compiled ahead of time: no JIT, no W+X pages.
    run_sandboxed_daemon(home, '[embedding]\nprovider = "local"\n')


# ProtectSystem=strict + ReadWritePaths=%h + RuntimeDirectory=memoryd + PrivateTmp=yes, the
# way systemd sets them up: a private mount namespace, the home and runtime folders bound
# writable, everything else read-only, fresh tmpfs on /tmp and /var/tmp.
FS_SANDBOX = """\
set -e
mount --make-rprivate /
mount --bind "$HOME" "$HOME"
mount --bind "$XDG_RUNTIME_DIR/memoryd" "$XDG_RUNTIME_DIR/memoryd"
mount -o remount,bind,ro /
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
if touch /etc/.memoryd-sandbox-probe 2>/dev/null; then echo "not read-only" >&2; exit 99; fi
exec "$@"
"""


def _can_unshare_mounts() -> bool:
    if os.geteuid() != 0 or not Path("/dev/shm").is_dir():
        return False
    try:
        return (
            subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=10).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _under_tmp(path: str) -> bool:
    real = Path(path).resolve()
    return any(real.is_relative_to(t) for t in (Path("/tmp"), Path("/var/tmp")))


@pytest.mark.skipif(
    not _can_unshare_mounts(),
    reason="needs root and mount namespaces (unshare -m) to emulate the unit",
)
@pytest.mark.skipif(
    _under_tmp(sys.prefix) or _under_tmp(memoryd.__file__),
    reason="this Python or checkout lives under /tmp, which PrivateTmp= hides",
)
def test_the_whole_unit_sandbox_leaves_the_daemon_its_job() -> None:
    # HOME on /dev/shm: outside /tmp, which the emulated PrivateTmp= hides.
    home = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="mdsbx"))
    try:
        _daemon_in_the_unit_sandbox(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _daemon_in_the_unit_sandbox(home: Path) -> None:
    runtime = home / "xdg"
    (runtime / "memoryd").mkdir(parents=True, mode=0o700)
    runtime.chmod(0o700)
    ws = home / "agents" / "alice"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe cat is called Pixel and likes boxes.\n")
    sock = runtime / "memoryd" / "memoryd.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime))  # as the user manager sets them
    log = home.parent / f"{home.name}.log"
    with FakeOpenAIServer() as server:
        config = home / ".config" / "memoryd" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f'[embedding]\nprovider = "openai"\nbase_url = "{server.base_url}"\n')
        with open(log, "wb") as err:
            daemon = subprocess.Popen(
                [
                    "unshare",
                    "-m",
                    "sh",
                    "-c",
                    FS_SANDBOX,
                    "sh",
                    *SANDBOX,
                    sys.executable,
                    "-m",
                    "memoryd.cli",
                    "run",
                    "--socket",
                    str(sock),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            _wait_for_socket(sock, daemon, log)
            with MemoryClient(sock, timeout=60) as c:
                c.workspace_add(ws)
                c.reindex(wait=True)
                found = c.search("what is the cat called", mode="vector")
                assert found.results and found.results[0].path == "MEMORY.md", found
                written = c.append("a note written from inside the sandbox")
            assert (ws / written.path).read_text().count("inside the sandbox") == 1
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(30) == EXIT_OK, log.read_text()
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
            text = log.read_text()
            log.unlink()
    assert "Traceback" not in text and "Read-only file system" not in text, text
    # Everything it keeps is under the home folder (and the socket in the runtime folder).
    assert list((home / ".local" / "share" / "memoryd" / "index").glob("alice-*.sqlite"))
    assert (home / ".local" / "state" / "memoryd" / "state.sqlite").exists()
    assert sock.exists() is False and (runtime / "memoryd" / "memoryd.lock").exists()
