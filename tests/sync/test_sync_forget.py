"""Forgets travel: a forget on one host removes the lines from the other at its next sync
(its own pre-image kept for its forget.keep_days), and they never come back."""

from __future__ import annotations

import json
from pathlib import Path

from sync_util import DAILY, host, make_remote, remote_files, settle, two_hosts

SECRET = "- the vault combination is 31-07-44"


def _line_of(text: str, line: str) -> int:
    return text.split("\n").index(line) + 1


def test_a_forget_on_one_host_is_gone_from_the_other_and_never_comes_back(
    tmp_path: Path,
) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append("- keep this one")
        a.append(SECRET)
        a.append("- and this one too")
        settle(a, b)
        assert SECRET in b.read(DAILY)
        # The laptop forgets the line; meanwhile the desktop writes to the same note.
        n = _line_of(a.read(DAILY), SECRET)
        with a.client() as c:
            c.forget(workspace="notes", path=DAILY, lines=str(n))
        b.append("- the desktop wrote meanwhile")
        assert SECRET not in a.read(DAILY)
        a.sync()
        report = b.sync()
        assert report["forgotten"] == {DAILY: 1}, report
        a.sync()
        for h in (a, b):
            text = h.read(DAILY)
            assert SECRET not in text
            assert "keep this one" in text and "the desktop wrote meanwhile" in text
        with b.client() as c:
            assert not [
                h
                for h in c.search("vault combination", workspace="notes").results
                if "vault" in h.snippet
            ]
        # The desktop kept its own pre-image (forget.keep_days), as a forget there would.
        changes = list((b.ws / "memory" / ".history" / "changes").glob("*/plan.json"))
        kinds = [json.loads(p.read_text())["kind"] for p in changes]
        assert "sync" in kinds
        # It never comes back: more syncs both ways, the remote's tip without it.
        settle(a, b)
        a.append("- later")
        settle(a, b)
        for h in (a, b):
            assert SECRET not in h.read(DAILY)
        assert SECRET not in remote_files(bare)[DAILY]
        ledger = remote_files(bare)["memory/.provenance.jsonl"]
        assert '"op":"forget"' in ledger  # the tombstone travelled (a key, never the text)
        assert "vault" not in ledger


def test_a_line_written_again_after_the_forget_stays(tmp_path: Path) -> None:
    """A tombstone is applied once per host: the same words written again later (the
    person meant it this time) are kept everywhere."""
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append(SECRET)
        settle(a, b)
        with a.client() as c:
            c.forget(workspace="notes", path=DAILY, lines=str(_line_of(a.read(DAILY), SECRET)))
        settle(a, b)
        assert SECRET not in b.read(DAILY)
        b.append(SECRET, day="2026-03-03")
        b.append(SECRET)  # the same note, later: an add after the tombstone revives it
        settle(a, b)
        for h in (a, b):
            assert SECRET in h.read("memory/2026-03-03.md")
            assert SECRET in h.read(DAILY)


def test_a_host_joining_with_an_old_copy_does_not_bring_a_forgotten_line_back(
    tmp_path: Path,
) -> None:
    """A third machine with its own old copy of the note (no history shared with the
    remote): its first sync is a union, and the tombstone keeps the forgotten line out."""
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append("- an old fact")
        a.append(SECRET)
        settle(a, b)
        old_copy = a.read(DAILY)
        with a.client() as c:
            c.forget(workspace="notes", path=DAILY, lines=str(_line_of(old_copy, SECRET)))
        settle(a, b)
        with host("server") as s:
            (s.ws / "memory" / "2026-03-02.md").write_text(old_copy + "\n- the server's own\n")
            with s.client() as c:
                report = c.sync_enable(f"file://{bare}", workspace="notes").report
            assert report["forgotten"] == {DAILY: 1}, report
            assert SECRET not in s.read(DAILY) and "the server's own" in s.read(DAILY)
            settle(a, b)
            for h in (a, b):
                assert SECRET not in h.read(DAILY) and "the server's own" in h.read(DAILY)


def test_a_forgotten_line_written_again_by_hand_is_kept_on_a_host_that_missed_the_forget(
    tmp_path: Path,
) -> None:
    """The forget and the line written anew by hand (no ledger record) reach the desktop in
    one sync: the tombstone does not take the line the remote's copy holds on purpose, and
    the sync does not fail on a file both hosts hold alike."""
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        a.append("- keep this one")
        a.append(SECRET)
        settle(a, b)
        before = a.read(DAILY)
        with a.client() as c:
            c.forget(workspace="notes", path=DAILY, lines=str(_line_of(before, SECRET)))
        a.sync()
        (a.ws / DAILY).write_text(before)  # the person puts it back by hand
        a.sync()
        report = b.sync()
        assert report["error"] is None and report["forgotten"] == {}, report
        settle(a, b)
        for h in (a, b):
            assert h.read(DAILY) == before
