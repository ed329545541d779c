"""export and import meet hostile paths and archives: an existing file, a memory file, a
FIFO or a device is never overwritten; a header bomb or a gzip bomb is refused before the
daemon holds it; a folder, a long member name, two exports at once get a clear error."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import DaemonThread, Proc, RawConn, error_code, memctl
from memoryd.lifecycle.archive import write_archive
from memoryd_client import ForbiddenPath, InvalidParams, MemoryClient, RemoteError

pytestmark = pytest.mark.timeout(120)
MiB = 1 << 20


@pytest.fixture
def ws(md_home: Path) -> Path:
    root = md_home / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\n- The user prefers tabs.\n")
    (root / "memory" / "2025-03-11.md").write_text("- The deploy target is fly.io.\n")
    return root


@pytest.fixture
def daemon(md_home: Path, ws: Path) -> Iterator[DaemonThread]:
    with DaemonThread(md_home, {"workspaces": [{"path": str(ws), "name": "ws"}]}) as d:
        yield d


def test_export_never_overwrites_what_it_is_pointed_at(
    daemon: DaemonThread, ws: Path, tmp_path: Path
) -> None:
    existing = tmp_path / "notes.txt"
    existing.write_text("my own file\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    memory = (ws / "MEMORY.md").read_bytes()
    with MemoryClient(daemon.socket_path) as c:
        with pytest.raises(InvalidParams, match="exists"):
            c.export(existing, workspace="ws")
        assert existing.read_text() == "my own file\n"
        for target in (fifo, Path("/dev/null"), tmp_path):  # with force too: not a file
            with pytest.raises(InvalidParams, match="not a regular file"):
                c.export(target, workspace="ws", force=True)
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISCHR(os.stat("/dev/null").st_mode)
        for inside in (ws / "MEMORY.md", ws / "memory" / "x.tar.gz", ws / "memory"):
            with pytest.raises(ForbiddenPath):
                c.export(inside, workspace="ws", force=True)
        assert (ws / "MEMORY.md").read_bytes() == memory
        done = c.export(existing, workspace="ws", force=True)  # a regular file, with force
        assert done.path == str(existing) and tarfile.is_tarfile(existing)
        assert stat.S_IMODE(existing.stat().st_mode) == 0o600
        fresh = tmp_path / "fresh.tar.gz"
        assert c.export(fresh, workspace="ws").files == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.tar.gz", "notes.txt", "pipe"]
    code, _, err = memctl(daemon, "export", "-w", "ws", "-o", str(existing))
    assert code != 0 and "exists" in err


def _tar_gz(entries: list[tuple[tarfile.TarInfo, bytes | None]], fmt: int) -> bytes:
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9) as gz,
        tarfile.open(fileobj=gz, mode="w", format=fmt) as tar,
    ):
        for info, data in entries:
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return buf.getvalue()


def _zeros_header_bomb(kind: bytes, size: int) -> bytes:
    """A tar.gz whose first header is a GNU long name (``L``) or a pax header (``x``) of
    ``size`` bytes: small packed (zeros), huge for a reader that trusts the header."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=9) as gz:
        info = tarfile.TarInfo("././@LongLink" if kind == b"L" else "pax")
        info.type, info.size = kind, size
        gz.write(info.tobuf(format=tarfile.GNU_FORMAT))
        block = b"a" * MiB
        for _ in range(size // MiB):
            gz.write(block)
        gz.write(b"\0" * (-size % tarfile.BLOCKSIZE))
        member = tarfile.TarInfo("memory/x.md")
        gz.write(member.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 1024)
    return buf.getvalue()


@pytest.mark.parametrize("kind", [b"L", b"x"])
def test_a_header_bomb_is_refused_before_the_daemon_holds_it(
    md_home: Path, ws: Path, tmp_path: Path, kind: bytes
) -> None:
    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(_zeros_header_bomb(kind, 200 * MiB))
    assert bomb.stat().st_size < 1 * MiB
    (md_home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\nname = "ws"\n')
    proc = Proc(md_home)
    try:
        proc.ready()
        before = proc.settled_rss_bytes()
        with RawConn(proc.socket, timeout=60) as c:
            for dry_run in (True, False):  # MCP's memory_import previews (dry run) first
                frame = c.call("import", {"workspace": "ws", "path": str(bomb), "dry_run": dry_run})
                assert error_code(frame) == "too_large", frame
        held = proc.rss_bytes() - before
        assert held < 40 * MiB, f"held {held // MiB} MiB for a 200 MiB header"
    finally:
        proc.kill()


def test_a_folder_a_long_member_name_and_exports_at_once_get_clear_errors(
    daemon: DaemonThread, ws: Path, tmp_path: Path
) -> None:
    long_name = "memory/" + "n" * 300 + ".md"
    info = tarfile.TarInfo(long_name)
    info.size = 4
    archive = tmp_path / "long.tar.gz"
    archive.write_bytes(_tar_gz([(info, b"- x\n")], tarfile.GNU_FORMAT))
    errors: list[str] = []
    with MemoryClient(daemon.socket_path) as c:
        with pytest.raises(InvalidParams, match="not a regular file"):
            c.import_archive(tmp_path, workspace="ws")
        with pytest.raises(InvalidParams, match="too long"):
            c.import_archive(archive, workspace="ws")

        def exporter() -> None:
            with MemoryClient(daemon.socket_path) as mine:
                for _ in range(8):
                    try:
                        mine.export(workspace="ws")
                    except RemoteError as exc:
                        errors.append(exc.code)

        threads = [threading.Thread(target=exporter) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(list((ws / "memory" / ".history" / "exports").iterdir())) == 5


def test_the_archive_a_bomb_test_writes_is_a_real_export(ws: Path, tmp_path: Path) -> None:
    """The limits do not refuse an ordinary export (a sanity check of the reader)."""
    out = tmp_path / "ok.tar.gz"
    write_archive(ws, "ws", out)
    from memoryd.lifecycle.archive import read_archive

    assert set(read_archive(out).files) == {"MEMORY.md", "memory/2025-03-11.md"}
