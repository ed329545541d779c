"""A real FUSE file system whose server can stop answering: a network mount whose server
went away, for read-your-writes' stats (index/filesystems.py, freshness.py).

The server speaks the kernel's protocol on /dev/fuse itself (no library) in a process of
its own: an empty root folder, every name looked up is not there. While ``hang()`` holds,
it answers no lookup: a stat under the mount waits in the kernel, as on NFS or sshfs when
the server is gone, until ``answer()``. Mounting needs root (CAP_SYS_ADMIN) and /dev/fuse:
``SlowFs.available()`` says whether this machine may; the tests skip otherwise, and when
the mount is refused all the same (``MountRefused``).

    with SlowFs(tmp_path / "mnt") as fs:
        fs.hang()
        ...  # os.stat(tmp_path / "mnt" / "x") now waits
        fs.answer()
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2
GIVE_UP_S = 20.0  # a hang ends by itself then: a test that failed does not hang for ever
INIT, LOOKUP, FORGET, GETATTR, STATFS, DESTROY, BATCH_FORGET = 26, 1, 2, 3, 17, 38, 42


class MountRefused(OSError):
    """This machine would not mount it (a container without CAP_SYS_ADMIN...)."""


class SlowFs:
    def __init__(self, mountpoint: Path) -> None:
        self.mountpoint = mountpoint
        self.control = mountpoint.parent / f".{mountpoint.name}.hang"
        self.proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> bool:
        return (
            sys.platform.startswith("linux")
            and os.geteuid() == 0
            and os.access("/dev/fuse", os.R_OK | os.W_OK)
        )

    def __enter__(self) -> SlowFs:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(self.mountpoint), str(self.control)],
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        said = self.proc.stdout.readline().decode().strip()
        if said != "mounted":
            self.proc.wait(10)
            self.proc.stdout.close()
            raise MountRefused(f"the FUSE server did not mount: {said!r}")
        return self

    def hang(self) -> None:
        self.asked.unlink(missing_ok=True)
        self.gave_up.unlink(missing_ok=True)
        self.control.touch()

    @property
    def asked(self) -> Path:
        """There once a lookup came in while the server hangs (a stat waits in it)."""
        return Path(f"{self.control}.asked")

    @property
    def gave_up(self) -> Path:
        """There once a hang ended by itself (GIVE_UP_S): what waited was not let go."""
        return Path(f"{self.control}.gave-up")

    def answer(self) -> None:
        self.control.unlink(missing_ok=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.answer()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.umount2(os.fsencode(self.mountpoint), MNT_DETACH)
        if self.proc is not None:
            try:
                self.proc.wait(10)  # DESTROY, or /dev/fuse gone: it ends
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            if self.proc.stdout is not None:
                self.proc.stdout.close()


def _attr(ino: int, mode: int) -> bytes:
    now = int(time.time())
    times = struct.pack("<QQQQQQ", ino, 0, 0, now, now, now)  # ino, size, blocks, a/m/ctime
    return times + struct.pack("<IIIIIIIIII", 0, 0, 0, mode, 2, 0, 0, 0, 4096, 0)


def _serve(mountpoint: str, control: str) -> None:
    fd = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
    flags = MS_NOSUID | MS_NODEV
    if libc.mount(b"slowfs", mountpoint.encode(), b"fuse.slowfs", flags, options) != 0:
        print(f"mount: {os.strerror(ctypes.get_errno())}", flush=True)
        return
    print("mounted", flush=True)

    def reply(unique: int, error: int = 0, payload: bytes = b"") -> None:
        os.write(fd, struct.pack("<IiQ", 16 + len(payload), -error, unique) + payload)

    while True:
        try:
            request = os.read(fd, 1 << 20)
        except OSError as exc:
            if exc.errno in (errno.EINTR, errno.ENOENT):  # interrupted, or an aborted request
                continue
            return  # ENODEV: unmounted
        _length, opcode, unique, node = struct.unpack_from("<IIQQ", request)
        if opcode == INIT:
            minor = struct.unpack_from("<II", request, 40)[1]
            init = struct.pack("<IIIIHHII", 7, min(minor, 31), 0, 0, 16, 12, 4096, 1)
            reply(unique, 0, init + struct.pack("<HHII", 1, 0, 0, 0) + bytes(24))
        elif opcode == LOOKUP:
            if os.path.exists(control):  # the server is gone: the kernel waits
                Path(control + ".asked").touch()
                gone = time.monotonic()
                while os.path.exists(control):
                    if time.monotonic() - gone > GIVE_UP_S:
                        Path(control + ".gave-up").touch()
                        break
                    time.sleep(0.02)
            reply(unique, errno.ENOENT)  # nothing is there (and the kernel keeps no answer)
        elif opcode == GETATTR and node == 1:
            reply(unique, 0, bytes(16) + _attr(1, 0o40755))
        elif opcode == STATFS:
            sizes = struct.pack("<IIII", 4096, 255, 4096, 0)  # bsize, namelen, frsize
            reply(unique, 0, bytes(40) + sizes + bytes(24))
        elif opcode in (FORGET, BATCH_FORGET):
            continue  # no answer expected
        elif opcode == DESTROY:
            reply(unique)
            return
        else:
            reply(unique, errno.ENOSYS if opcode != GETATTR else errno.ENOENT)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
