"""Sessions OpenClaw archived (deleted or reset): read from `session_transcript_archives`
(hash and header checked, zstd or not) and copied into the workspace once, after what was
copied while they were live, never for a forgotten session."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fakes.openclaw_store import add_events, archive_session, create_store, message, store_path
from memoryd.files import openclaw_archives, openclaw_mirror, openclaw_store

SESSION = "d6008abf-6cb5-4cf1-bf7a-b0193b78f8ec"
COPY = f"sessions/openclaw/main/{SESSION}.jsonl"


class DictMarks:
    """Marks kept in a dict (the daemon keeps them in its state database)."""

    def __init__(self) -> None:
        self.seqs: dict[tuple[str, str], int] = {}

    def of(self, store: Path) -> dict[str, int]:
        return {s: q for (st, s), q in self.seqs.items() if st == str(store)}

    def set(self, store: Path, session: str, seq: int) -> None:
        self.seqs[(str(store), session)] = seq


def header(session: str = SESSION) -> dict[str, object]:
    return {"type": "session", "version": 4, "id": session}


@pytest.mark.parametrize("zstd", [True, False], ids=["zstd", "identity"])
def test_an_archive_reads_back_as_the_sessions_lines(tmp_path: Path, zstd: bool) -> None:
    path = store_path(tmp_path)
    oc = create_store(path)
    add_events(oc, SESSION, [header(), message("user", "rotate the 鲸鱼 keys")])
    add_events(oc, SESSION, [message("assistant", "done")], zstd=True)
    text = archive_session(oc, SESSION, zstd=zstd)
    with openclaw_store.open_store(path) as conn:
        assert openclaw_store.session_rows(conn, SESSION) == 0  # the rows left
        [archive] = openclaw_archives.list_archives(conn)
        assert (archive.session_id, archive.reason) == (SESSION, "deleted")
        lines = list(openclaw_archives.archive_lines(conn, archive))
        assert b"\n".join(lines) + b"\n" == text and len(lines) == 3
        data = io.BufferedReader(openclaw_archives.LinesReader(iter(lines), 1)).read()
        assert [json.loads(x)["type"] for x in data.splitlines()] == ["message", "message"]


def test_an_archive_whose_hash_or_header_does_not_match_is_refused(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    oc = create_store(path)
    add_events(oc, "a", [header("a"), message("user", "x")])
    add_events(oc, "b", [header("someone-else"), message("user", "y")])
    archive_session(oc, "a", tamper=True)
    archive_session(oc, "b", generation="g2")
    with openclaw_store.open_store(path) as conn:
        tampered, wrong = openclaw_archives.list_archives(conn)
        with pytest.raises(openclaw_store.StoreError, match="do not match their archive_sha256"):
            list(openclaw_archives.archive_lines(conn, tampered))
        with pytest.raises(openclaw_store.StoreError, match="header names 'someone-else'"):
            list(openclaw_archives.archive_lines(conn, wrong))


def test_a_store_without_the_archive_table_has_no_archives(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    create_store(path)
    with openclaw_store.open_store(path) as conn:
        assert openclaw_archives.list_archives(conn) == []


def test_an_archived_session_adds_to_its_copy_only_what_the_copy_lacks(tmp_path: Path) -> None:
    path = store_path(tmp_path)
    root = tmp_path / "ws"
    oc = create_store(path)
    add_events(oc, SESSION, [header(), message("user", "first turn")])
    marks = DictMarks()
    done: set[tuple[str, str]] = set()
    first = openclaw_mirror.mirror_store(path, root, marks, archives_done=done)
    assert first.rows_mirrored == 2
    # more turns, then deleted before the mirror saw them; another session never seen live
    add_events(oc, SESSION, [message("assistant", "second turn, the heron")], zstd=True)
    text = archive_session(oc, SESSION)
    add_events(oc, "gone", [header("gone"), message("user", "the pelican")])
    gone = archive_session(oc, "gone", reason="reset", zstd=False)

    report = openclaw_mirror.mirror_store(path, root, marks, archives_done=done)
    assert report.error is None and report.archives_read == 2
    assert report.rows_mirrored == 1 + 2
    assert (root / COPY).read_bytes() == text  # each line once, in order
    assert (root / "sessions/openclaw/main/gone.jsonl").read_bytes() == gone
    assert marks.of(path) == {SESSION: 2, "gone": 1}
    assert {f.name for f in report.files} == {f"{SESSION}.jsonl", "gone.jsonl"}

    again = openclaw_mirror.mirror_store(path, root, marks, archives_done=done)
    assert again.archives_read == 0 and again.rows_mirrored == 0  # read once per process
    restarted = openclaw_mirror.mirror_store(path, root, marks, archives_done=set())
    assert restarted.archives_read == 2 and restarted.rows_mirrored == 0  # the marks hold
    assert (root / COPY).read_bytes() == text


def test_without_marks_an_archive_resumes_after_its_copys_lines(tmp_path: Path) -> None:
    """A state database rebuilt from workspaces.json has no marks: the copy's lines count."""
    path = store_path(tmp_path)
    root = tmp_path / "ws"
    oc = create_store(path)
    add_events(oc, SESSION, [header(), message("user", "one"), message("user", "two")])
    openclaw_mirror.mirror_store(path, root, DictMarks())
    add_events(oc, SESSION, [message("user", "three")])
    text = archive_session(oc, SESSION)
    report = openclaw_mirror.mirror_store(path, root, DictMarks())
    assert report.rows_mirrored == 1 and (root / COPY).read_bytes() == text


def test_a_forgotten_or_damaged_archive_is_not_copied_and_the_others_are(
    tmp_path: Path,
) -> None:
    path = store_path(tmp_path)
    root = tmp_path / "ws"
    oc = create_store(path)
    for s in ("forgotten", "damaged", "fine"):
        add_events(oc, s, [header(s), message("user", f"{s} text")])
        archive_session(oc, s, tamper=s == "damaged", generation=s)
    report = openclaw_mirror.mirror_store(
        path, root, DictMarks(), forgotten=frozenset({"forgotten"}), archives_done=set()
    )
    assert report.error is None
    assert "forgotten" in report.skipped["forgotten"]
    assert "archive_sha256" in report.skipped["damaged"]
    names = sorted(p.name for p in (root / "sessions/openclaw/main").iterdir())
    assert names == ["fine.jsonl"]
