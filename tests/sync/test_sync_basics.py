"""Two real daemons, two homes, one bare repository (file://): appends on both hosts reach
both, each line once; what is synced and what never is."""

from __future__ import annotations

import threading
from pathlib import Path

from sync_util import DAILY, host, lines_of, make_remote, remote_files, settle, two_hosts


def test_concurrent_appends_on_both_hosts_every_line_once(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with two_hosts(f"file://{bare}") as (a, b):
        written: dict[str, list[str]] = {"laptop": [], "desktop": []}

        def agent(h: object, tag: str, n: int) -> None:
            for i in range(n):
                text = f"- {tag} note {i}"
                h.append(text, heading="Notes")  # type: ignore[attr-defined]

        def syncing(h: object) -> None:
            for _ in range(3):
                h.sync()  # type: ignore[attr-defined]

        workers = [
            threading.Thread(target=agent, args=(a, f"laptop-{k}", 15)) for k in range(2)
        ] + [threading.Thread(target=agent, args=(b, f"desktop-{k}", 15)) for k in range(2)]
        workers += [threading.Thread(target=syncing, args=(h,)) for h in (a, b)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        settle(a, b)
        expected = {f"- {who}-{k} note {i}" for who in written for k in range(2) for i in range(15)}
        for h in (a, b):
            got = lines_of(h.read(DAILY))
            assert sorted(got) == sorted(expected), h.name  # each once, none lost
        assert a.read(DAILY) == b.read(DAILY)
        assert a.read(DAILY).count("## Notes") >= 1
        assert "<<<<<<<" not in a.read(DAILY)
        assert remote_files(bare)[DAILY] == a.read(DAILY)
        # Searchable on the other host.
        with b.client() as c:
            hits = c.search("laptop-1 note 7", workspace="notes").results
        assert any(h.path == DAILY for h in hits)


def test_what_is_synced_and_what_never_is(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    with host("laptop") as a:
        (a.ws / "MEMORY.md").write_text("# Memory\n\n- the deploy target is blue\n")
        (a.ws / "USER.md").write_text("# User\n\n- prefers short answers\n")
        (a.ws / "memory" / "projects").mkdir()
        (a.ws / "memory" / "projects" / "alpha.md").write_text("- alpha ships in May\n")
        (a.ws / "memory" / ".history").mkdir()
        (a.ws / "memory" / ".history" / "MEMORY.old.md").write_text("- old\n")
        (a.ws / "sessions").mkdir()
        (a.ws / "sessions" / "s1.jsonl").write_text('{"role":"user"}\n')
        (a.ws / "src").mkdir()
        (a.ws / "src" / "app.py").write_text("print(1)\n")
        (a.ws / "memory" / "link.md").symlink_to(a.ws / "MEMORY.md")
        a.append("- appended through the daemon")
        with a.client() as c:
            c.sync_enable(f"file://{bare}", workspace="notes")
        files = remote_files(bare)
        assert set(files) == {
            "MEMORY.md",
            "USER.md",
            "memory/projects/alpha.md",
            DAILY,
            "memory/.provenance.jsonl",
        }
        assert "appended through the daemon" in files[DAILY]
        state = a.status()
        assert state["enabled"] and state["last_push_at"]
        assert state["waiting"]["commits"] == 0 and state["waiting"]["files"] == []


def test_transcripts_are_synced_only_when_opted_in_and_under_the_cap(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    sync = {"transcripts": True, "transcript_max_bytes": 200}
    with host("laptop", sync, remote=f"file://{bare}") as a:
        (a.ws / "sessions").mkdir()
        (a.ws / "sessions" / "small.jsonl").write_text('{"role":"user","text":"hi"}\n')
        (a.ws / "sessions" / "big.jsonl").write_text('{"role":"user"}\n' * 50)
        a.sync()
        files = remote_files(bare)
        assert "sessions/small.jsonl" in files and "sessions/big.jsonl" not in files
