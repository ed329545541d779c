"""export and import through a real daemon: a round trip, a merge without duplicates,
the archives refused whole, and a kill -9 during an import (whole or absent)."""

from __future__ import annotations

import hashlib
import io
import json
import random
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_util import DaemonThread, Proc, RawConn, memctl, short_tmp
from memoryd.files.lines import line_key
from memoryd.files.provenance import Ledger, Record
from memoryd.lifecycle.archive import MAX_IMPORT_BYTES, write_archive
from memoryd_client import InvalidParams, MemoryClient, RemoteError, protocol

pytestmark = pytest.mark.timeout(120)

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"


@pytest.fixture
def two(md_home: Path) -> tuple[Path, Path]:
    src, dst = md_home / "src", md_home / "dst"
    (src / "memory").mkdir(parents=True)
    (dst / "memory").mkdir(parents=True)
    (src / "MEMORY.md").write_text("# Memory\n\n## People\n- Dana owns billing.\n")
    (src / "USER.md").write_text("- Prefers short answers.\n")
    (src / "memory" / "2025-03-11.md").write_text(
        "# 2025-03-11\n\n- The deploy target is fly.io.\n- Lunch at noon.\n"
    )
    Ledger(src).add(
        [Record(line_key("- Lunch at noon."), "memory/2025-03-11.md", "agent", "s1", None)]
    )
    (dst / "MEMORY.md").write_text("# Memory\n\n## People\n- dana owns billing.\n")
    return src, dst


@pytest.fixture
def daemon(md_home: Path, two: tuple[Path, Path]) -> Iterator[DaemonThread]:
    config = {"workspaces": [{"path": str(p), "name": p.name} for p in two]}
    with DaemonThread(md_home, config) as d:
        yield d


def test_export_then_import_merges_without_duplicates(
    daemon: DaemonThread, two: tuple[Path, Path], md_home: Path
) -> None:
    src, dst = two
    archive = md_home / "out.tar.gz"
    code, out, _ = memctl(daemon, "export", "-w", "src", "-o", str(archive))
    assert code == 0 and "exported 4 file(s)" in out, out
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert names == {
        "MEMORY.md",
        "USER.md",
        "memory/2025-03-11.md",
        "memory/.provenance.jsonl",
        "manifest.json",
    }
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}
    assert listed["USER.md"] == hashlib.sha256((src / "USER.md").read_bytes()).hexdigest()

    code, out, _ = memctl(daemon, "import", str(archive), "-w", "dst")
    assert code == 0, out
    # "Dana owns billing." was there (case aside): not added twice; the rest created.
    assert (dst / "MEMORY.md").read_text() == "# Memory\n\n## People\n- dana owns billing.\n"
    assert (dst / "memory" / "2025-03-11.md").read_text() == (
        src / "memory" / "2025-03-11.md"
    ).read_text()
    assert (dst / "USER.md").read_text() == "- Prefers short answers.\n"
    ledger = Ledger(dst)
    ledger.refresh()
    found = ledger.lookup("memory/2025-03-11.md", line_key("- Lunch at noon."))
    assert found is not None and found.origin == "agent"  # provenance travels

    before = {p: p.read_bytes() for p in dst.rglob("*.md")}
    with MemoryClient(daemon.socket_path) as c:
        again = c.import_archive(archive, workspace="dst")
        assert again.lines_added == 0 and again.lines_already_there >= 4
        hits = c.search("deploy target fly", workspace="dst", mode="keyword").results
    assert {p: p.read_bytes() for p in dst.rglob("*.md")} == before
    assert hits and hits[0].path == "memory/2025-03-11.md"


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], manifest: bool = True) -> None:
    with tarfile.open(path, "w:gz") as tar:
        files = []
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
            if info.isreg():
                files.append({"path": info.name, "sha256": hashlib.sha256(data).hexdigest()})
        if manifest:
            body = json.dumps({"format": "memoryd-export", "v": 1, "files": files}).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))


def _file(name: str, data: bytes = b"- x\n") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, b""


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ([_file("../escape.md")], "outside the workspace"),
        ([_file("/etc/evil.md")], "outside the workspace"),
        ([_file("memory/../../evil.md")], "outside the workspace"),
        ([_link("memory/a.md", "/etc/passwd")], "link"),
        ([_link("memory/b.md", "MEMORY.md", tarfile.LNKTYPE)], "link"),
        ([_file("notes.txt")], "not a memory file"),
        ([_file("memory/.history/x.md")], "not a memory file"),
    ],
)
def test_an_archive_with_a_bad_member_is_refused_whole(
    daemon: DaemonThread,
    two: tuple[Path, Path],
    md_home: Path,
    members: list[tuple[tarfile.TarInfo, bytes]],
    says: str,
) -> None:
    _, dst = two
    archive = md_home / "bad.tar.gz"
    _tar(archive, [_file("memory/2025-01-01.md", b"- fine line\n"), *members])
    with MemoryClient(daemon.socket_path) as c, pytest.raises(InvalidParams) as info:
        c.import_archive(archive, workspace="dst")
    assert says in str(info.value)
    assert not (dst / "memory" / "2025-01-01.md").exists()  # nothing of it landed
    assert not (md_home / "escape.md").exists()


def test_a_member_not_matching_its_manifest_or_an_oversized_archive_is_refused(
    daemon: DaemonThread, two: tuple[Path, Path], md_home: Path
) -> None:
    _, dst = two
    archive = md_home / "tampered.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (
            ("memory/2025-01-01.md", b"- changed\n"),
            (
                "manifest.json",
                json.dumps(
                    {
                        "format": "memoryd-export",
                        "files": [{"path": "memory/2025-01-01.md", "sha256": "0" * 64}],
                    }
                ).encode(),
            ),
        ):
            info, _ = _file(name, data)
            tar.addfile(info, io.BytesIO(data))
    big = md_home / "big.tar.gz"
    with big.open("wb") as f:
        f.truncate(MAX_IMPORT_BYTES + 1)  # sparse: over the limit on paper
    with MemoryClient(daemon.socket_path) as c:
        with pytest.raises(InvalidParams, match="manifest hash"):
            c.import_archive(archive, workspace="dst")
        with pytest.raises(RemoteError, match="over the import limit"):
            c.import_archive(big, workspace="dst")
    assert not (dst / "memory" / "2025-01-01.md").exists()


def test_import_redacts_a_secret_on_the_way_in(
    daemon: DaemonThread, two: tuple[Path, Path], md_home: Path
) -> None:
    _, dst = two
    archive = md_home / "s.tar.gz"
    _tar(archive, [_file("memory/2025-01-02.md", f"- CI token {GITHUB}\n".encode())])
    with MemoryClient(daemon.socket_path) as c:
        res = c.import_archive(archive, workspace="dst")
    assert res.redacted == 1
    text = (dst / "memory" / "2025-01-02.md").read_text()
    assert GITHUB not in text and "[REDACTED:github_token]" in text


# ------------------------------------------------------------------ kill -9 during import

FILES = 40


def test_an_import_killed_at_any_moment_is_whole_or_absent_after_the_restart() -> None:
    work = short_tmp()
    try:
        src = work / "src"
        (src / "memory").mkdir(parents=True)
        for i in range(FILES):
            (src / "memory" / f"2025-02-{i % 28 + 1:02d}-{i:02d}.md").write_text(
                f"- imported fact {i} about the walrus\n"
            )
        archive = work / "a.tar.gz"
        write_archive(src, "src", archive)
        rng = random.Random(26)
        took = _import_and_kill(work, archive, -1)
        for _ in range(5):
            _import_and_kill(work, archive, rng.uniform(0, took * 1.2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _import_and_kill(work: Path, archive: Path, delay: float) -> float:
    home = work / f"h{time.monotonic_ns() % 10**9}"
    ws = home / "ws"
    (ws / "memory").mkdir(parents=True)
    (home / "config.toml").write_text(f'[[workspaces]]\npath = "{ws}"\nname = "ws"\n')
    proc = Proc(home)
    took = 0.0
    try:
        proc.ready()
        with RawConn(proc.socket, timeout=30) as conn:
            conn.send(protocol.request(1, "import", {"workspace": "ws", "path": str(archive)}))
            started = time.monotonic()
            if delay < 0:
                assert conn.frame()["ok"]
                took = time.monotonic() - started
            else:
                time.sleep(delay)
    finally:
        proc.kill()
    again = Proc(home)
    try:
        again.ready()
        with RawConn(again.socket, timeout=60) as c:
            # Answered once the start (and its recovery) is done; the log says why if not.
            c.send(protocol.request(1, "hello"))
            frame = c.recv()
            assert frame is not None and frame["ok"], (frame, again.logs()[-8:])
    finally:
        again.kill()
    present = sum("walrus" in p.read_text() for p in (ws / "memory").glob("*.md"))
    assert present in (0, FILES), f"half imported: {present} of {FILES}"
    shutil.rmtree(home, ignore_errors=True)
    return took
