"""Freshness: the watcher keeps indexes current, and a search sees writes made before it."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import threading
import time
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from daemon_util import DaemonThread, RawConn, run_daemon, wait_for
from engine_util import IndexFactory
from memoryd.files.fsutil import atomic_write
from memoryd.workspace.watcher import Watcher, WatchTarget, is_editor_temp
from memoryd_client.client import MemoryClient


def workspace(root: Path) -> Path:
    (root / "memory" / "topics").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe deploy target is kubernetes.\n")
    return root


def today_file(ws: Path) -> Path:
    return ws / "memory" / f"{dt.date.today().isoformat()}.md"


def status_of(c: RawConn) -> dict[str, Any]:
    [ws] = c.result("status")["workspaces"]
    return ws  # type: ignore[no-any-return]


def paths_found(c: RawConn, query: str) -> list[str]:
    return [r["path"] for r in c.result("search", {"query": query, "mode": "keyword"})["results"]]


def test_a_write_is_visible_to_the_very_next_search(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        for i in range(5):
            today_file(ws).write_text(f"# Today\n\nwe adopted codename zeppelin{i}\n")
            assert paths_found(c, f"zeppelin{i}") == [today_file(ws).relative_to(ws).as_posix()]
            atomic_write(ws / "MEMORY.md", f"# Memory\n\nThe deploy target is nomad{i}.\n".encode())
            res = c.result("search", {"query": f"nomad{i}", "mode": "keyword"})
            assert [r["path"] for r in res["results"]] == ["MEMORY.md"], res
            assert res.get("stale") is not True and res["waited_ms"] >= 0
        assert paths_found(c, "kubernetes") == []  # the old text is gone too


def test_a_filtered_search_sees_a_write_its_filters_let_through(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    today = dt.date.today().isoformat()
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        for i in range(3):
            with today_file(ws).open("a") as f:
                f.write(f"- we adopted codename dirigible{i}\n")
            atomic_write(ws / "MEMORY.md", f"# Memory\n\nThe airship is {i}.\n".encode())
            dated = {"mode": "keyword", "since": today, "path_prefix": "memory/"}
            res = c.result("search", {"query": f"dirigible{i}", **dated})
            assert [r["path"] for r in res["results"]] == [f"memory/{today}.md"], res
            res = c.result("search", {"query": "airship", "path_prefix": "MEM", "mode": "keyword"})
            assert [r["snippet"] for r in res["results"]] == [f"# Memory\n\nThe airship is {i}."]


def test_appended_text_is_searchable_immediately(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        added = c.result("append", {"text": "the quokka incident", "date": "2020-01-02"})
        res = c.result("search", {"query": "quokka", "mode": "keyword"})
        [hit] = res["results"]
        assert hit["path"] == added["path"] == "memory/2020-01-02.md"
        assert hit["start_line"] <= added["start_line"] <= hit["end_line"]


def test_watcher_indexes_a_non_hot_file_without_any_search(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: status_of(c)["files"] == 1)
        (ws / "memory" / "topics" / "deep.md").write_text("# Deep\n\nplatypus notes\n")
        assert wait_for(lambda: status_of(c)["files"] == 2, timeout=5)
        (ws / "memory" / "topics" / "deep.md").unlink()
        assert wait_for(lambda: status_of(c)["files"] == 1, timeout=5)


def inotify_watches() -> int | None:
    """Watches this process holds across its inotify instances (Linux), else None."""
    fdinfo = Path("/proc/self/fdinfo")
    if not fdinfo.is_dir():
        return None
    total = 0
    for entry in fdinfo.iterdir():
        try:
            total += entry.read_text().count("inotify wd:")
        except OSError:  # an fd closed meanwhile
            continue
    return total


def test_only_the_folders_that_hold_notes_are_watched_deeply(md_home: Path) -> None:
    # An agent's workspace may hold a repository or a build tree: its folders are never
    # watched (each would cost an inotify watch and wake the daemon on every build).
    ws = workspace(md_home / "ws")
    for i in range(150):
        (ws / "repo" / "node_modules" / f"pkg{i}" / "lib").mkdir(parents=True)
    before = inotify_watches()
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: status_of(c)["files"] == 1)
        (ws / "memory" / "topics" / "deep.md").write_text("# Deep\n\nplatypus notes\n")
        assert wait_for(lambda: status_of(c)["files"] == 2, timeout=5)
        (ws / "MEMORY.md").write_text("# Memory\n\nThe deploy target is nomad.\n")
        assert wait_for(lambda: paths_found(c, "nomad") == ["MEMORY.md"], timeout=5)
        after = inotify_watches()
        if before is not None and after is not None:
            assert after - before < 20, f"{after - before} inotify watches"


def test_a_memory_folder_made_after_the_start_is_watched(md_home: Path) -> None:
    ws = md_home / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: status_of(c)["files"] == 1)
        (ws / "memory").mkdir()
        (ws / "memory" / "2024-05-01.md").write_text("- first note\n")
        assert wait_for(lambda: status_of(c)["files"] == 2, timeout=5)
        (ws / "memory" / "sub").mkdir()  # written into once the folder is watched
        (ws / "memory" / "sub" / "later.md").write_text("- quokka\n")
        assert wait_for(lambda: status_of(c)["files"] == 3, timeout=5)
        assert d.daemon is not None and d.daemon.watcher.describe("ws") == "watching"


def test_transcripts_and_extra_paths_are_watched_too(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    (ws / "sessions").mkdir()
    (ws / "docs" / "deep").mkdir(parents=True)
    config = {"index": {"sessions": True, "extra_paths": ["docs/deep", "notes/todo.md"]}}
    (ws / "notes").mkdir()
    with DaemonThread(md_home, config=config) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws)})
        assert wait_for(lambda: status_of(c)["files"] == 1)
        (ws / "sessions" / "s1.jsonl").write_text(
            '{"type": "message", "message": {"role": "user", "content": "hello wombat"}}\n'
        )
        (ws / "docs" / "deep" / "a.md").write_text("- docs about numbats\n")
        (ws / "notes" / "todo.md").write_text("- buy quinoa\n")
        assert wait_for(lambda: status_of(c)["files"] == 4, timeout=5), status_of(c)


def test_changes_are_batched_to_the_writer(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c, capture_logs() as logs:

        def synced() -> list[Any]:  # a sync logs once done: after status counts its files
            return [e for e in logs if e["event"] == "index_synced"]

        c.result("workspace.add", {"path": str(ws)})
        # The first scan (MEMORY.md) may log after status counts its file: wait for its
        # line too, or it could be counted with the 60 below.
        assert wait_for(lambda: status_of(c)["files"] == 1 and len(synced()) == 1)
        logs.clear()
        for i in range(60):
            (ws / "memory" / "topics" / f"t{i}.md").write_text(f"topic {i}\n")
        assert wait_for(lambda: sum(e["files_changed"] for e in synced()) >= 60, timeout=10)
        syncs = synced()
        assert status_of(c)["files"] == 61
        assert sum(e["files_changed"] for e in syncs) == 60
        assert len(syncs) < 30, f"{len(syncs)} syncs for 60 files: not batched"


def test_workspace_added_at_run_time_is_watched_and_removed_one_is_not(md_home: Path) -> None:
    first, second = workspace(md_home / "a"), workspace(md_home / "b")
    with DaemonThread(md_home) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(first)})
        c.result("workspace.add", {"path": str(second)})
        (second / "memory" / "topics" / "n.md").write_text("wombat\n")
        assert wait_for(
            lambda: c.result("status", {"workspace": "b"})["workspaces"][0]["files"] == 2, timeout=5
        )
        c.result("workspace.remove", {"workspace": "b"})
        assert d.daemon is not None
        assert d.daemon.watcher.describe("b") == "not watched"
        assert d.daemon.watcher.describe("a") == "watching"


def test_editor_temp_files_are_recognised() -> None:
    for name in (
        "MEMORY.md.swp",
        ".MEMORY.md.swx",
        "notes.md~",
        ".#notes.md",
        "4913",
        ".2024-01-01.md.x1y2.tmp",
        "#notes.md#",
    ):
        assert is_editor_temp(Path("/w/memory") / name), name
    for name in ("MEMORY.md", "2024-01-01.md", "notes.tmp.md"):
        assert not is_editor_temp(Path("/w/memory") / name), name


def old_days(ws: Path, n: int, word: str) -> Path:
    """``n`` daily logs of long ago (none a hot file), the last holding ``word``."""
    day = dt.date(2019, 1, 1)
    for i in range(n):
        path = ws / "memory" / f"{day + dt.timedelta(days=i)}.md"
        path.write_text(f"# Day {i}\n\nroutine notes {i}\n" + (word if i == n - 1 else ""))
    return path


def test_a_search_right_after_workspace_add_waits_for_the_first_scan(md_home: Path) -> None:
    ws = md_home / "ws"  # no hot file (MEMORY.md, today's log) whose sync would wait too
    (ws / "memory").mkdir(parents=True)
    last = old_days(ws, 300, "the zanzibar decision")
    with (
        DaemonThread(md_home, {"server": {"read_your_writes_ms": 60_000}}) as d,
        RawConn(d.socket_path) as c,
    ):
        c.result("workspace.add", {"path": str(ws)})  # its first scan has just begun
        res = c.result("search", {"query": "zanzibar", "mode": "keyword"})
        assert [r["path"] for r in res["results"]] == [last.relative_to(ws).as_posix()], res
        assert "stale" not in res and res["pending_files"] == 0


def test_past_the_budget_a_search_during_the_first_scan_says_stale(md_home: Path) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    old_days(ws, 300, "the zanzibar decision")
    with (
        DaemonThread(md_home, {"server": {"read_your_writes_ms": 0}}) as d,
        RawConn(d.socket_path) as c,
    ):
        c.result("workspace.add", {"path": str(ws)})
        res = c.result("search", {"query": "zanzibar", "mode": "keyword"})
        # Found (the scan was quicker than this search) or said to be possibly missing:
        # never an empty answer that claims to be current.
        assert res["results"] or (res["stale"] is True and res["pending_files"] > 0), res
        c.result("reindex", {"wait": True})
        res = c.result("search", {"query": "zanzibar", "mode": "keyword"})
        assert res["results"] and "stale" not in res


def test_the_first_search_after_a_start_finds_a_file_that_came_while_stopped(
    md_home: Path,
) -> None:
    ws = workspace(md_home / "ws")
    old_days(ws, 300, "")
    config = {"server": {"read_your_writes_ms": 60_000}}
    with DaemonThread(md_home, config) as d, RawConn(d.socket_path) as c:
        c.result("workspace.add", {"path": str(ws), "wait": True})
    # While no daemon ran: a log of long ago came (not a hot file; the watcher was not there)
    came = ws / "memory" / "2018-06-01.md"
    came.write_text("# An old day\n\nthe pangolin decision\n")

    async def main() -> None:
        async with run_daemon(md_home, config, wait_background=False) as daemon:
            with RawConn(daemon.socket_path) as c:  # the startup scan may still be running
                params = {"query": "pangolin", "mode": "keyword"}
                res = await asyncio.to_thread(c.result, "search", params)
                assert [r["path"] for r in res["results"]] == ["memory/2018-06-01.md"], res
                assert "stale" not in res

    asyncio.run(main())


def test_twenty_clients_search_while_files_are_edited(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    for i in range(20):
        (ws / "memory" / "topics" / f"f{i}.md").write_text(f"# F{i}\n\nalpha beta gamma {i}\n")
    # The first searches wait for the added workspace's first scan: a loaded machine may
    # need more than the default second for it (an answer past it would be stale, empty).
    with DaemonThread(md_home, {"server": {"read_your_writes_ms": 60_000}}) as d:
        with MemoryClient(d.socket_path) as setup:
            setup.workspace_add(ws)
        stop = threading.Event()
        errors: list[BaseException] = []
        counts: list[int] = []
        progress = [0] * 21  # searches done by each searcher, then the editor's edits

        def editor() -> None:
            n = 0
            while not stop.is_set():
                progress[20] = n
                target = ws / "memory" / "topics" / f"f{n % 20}.md"
                target.write_text(f"# F{n}\n\nalpha beta gamma edit{n}\n")
                with today_file(ws).open("a") as f:
                    f.write(f"alpha daily line {n}\n")
                n += 1
                time.sleep(0.005)

        def searcher(k: int) -> None:
            done = 0
            try:
                with MemoryClient(d.socket_path) as client:
                    while not stop.is_set():
                        res = client.search("alpha beta gamma", max_results=10, mode="keyword")
                        assert res.results, "no results"
                        for hit in res.results:
                            assert not os.path.isabs(hit.path) and ".." not in hit.path
                            assert 1 <= hit.start_line <= hit.end_line
                            assert isinstance(hit.snippet, str) and hit.snippet
                            assert 0.0 <= hit.score <= 1.0
                        done += 1
                        progress[k] = done
            except BaseException as exc:
                errors.append(exc)
            counts.append(done)

        threads = [threading.Thread(target=editor)] + [
            threading.Thread(target=searcher, args=(k,)) for k in range(20)
        ]
        for t in threads:
            t.start()
        # Until every client searched a few times while the editor kept editing (or failed).
        wait_for(lambda: errors or (min(progress[:20]) >= 5 and progress[20] >= 100), 60)
        stop.set()
        for t in threads:
            t.join(30)
        assert not errors, errors[:3]
        assert len(counts) == 20 and min(counts) > 0
        with MemoryClient(d.socket_path) as client:  # and the last edit is visible
            last = today_file(ws).read_text().strip().splitlines()[-1].split()[-1]
            found = client.search(f"daily line {last}", mode="keyword", max_results=100)
            assert any(h.path.endswith(today_file(ws).name) for h in found.results)


def test_a_reload_changes_the_search_settings_of_an_index_already_open(md_home: Path) -> None:
    ws = workspace(md_home / "ws")
    for i in range(4):
        (ws / "memory" / "topics" / f"t{i}.md").write_text(f"# T{i}\n\nthe walrus {i}\n")
    config = md_home / "config.toml"  # what a reload reads
    with (
        DaemonThread(md_home, {"workspaces": [{"path": str(ws)}]}) as d,
        RawConn(d.socket_path) as c,
    ):

        def found() -> int:
            return len(c.result("search", {"query": "walrus", "mode": "keyword"})["results"])

        assert wait_for(lambda: found() == 4)  # the startup scan done
        config.write_text(f'[[workspaces]]\npath = "{ws}"\n\n[search]\nmax_results = 2\n')
        assert d.daemon is not None
        d.call_in_loop(d.daemon.request_reload)  # what SIGHUP does
        assert wait_for(lambda: found() == 2)


def test_a_search_waits_for_the_writes_before_it_not_for_those_after(
    make_index: IndexFactory,
) -> None:
    # A steady stream of writes keeps the watcher's batch busy for good: a search waits for
    # the round holding the writes made before it was asked, never for the rounds after.
    for name in ("a", "b", "held"):
        make_index.write(f"memory/{name}.md", f"# {name}\n\n{name} notes\n")
    ix = make_index()
    ix.sync()
    held = make_index.ws / "memory" / "held.md"
    gates = [threading.Event(), threading.Event()]

    def holding(gate: threading.Event) -> Any:
        return ix.submit_sync([held], progress=lambda _p: gate.wait(60))  # on the writer

    async def main() -> None:
        w = Watcher(debounce_ms=50)
        await w.set_targets([WatchTarget("ws", ix.root, ix)])
        try:
            first = holding(gates[0])
            assert w.settled("ws")  # nothing queued: a search does not wait (wait_synced)
            w.submit("ws", [make_index.ws / "memory" / "a.md"])  # round 1, behind `first`
            assert not w.settled("ws")
            await asyncio.sleep(0)  # its sync is queued on the writer...
            second = holding(gates[1])  # ...and this one after it, before round 2's
            before_b = asyncio.create_task(w.wait_synced("ws", 60))
            await asyncio.sleep(0)
            w.submit("ws", [make_index.ws / "memory" / "b.md"])  # round 2
            after_b = asyncio.create_task(w.wait_synced("ws", 60))
            gates[0].set()
            assert await asyncio.wait_for(before_b, 20)  # round 2 is still held
            assert w.pending("ws") == 1 and not after_b.done() and not w.settled("ws")
            gates[1].set()
            assert await asyncio.wait_for(after_b, 20)
            assert w.pending("ws") == 0 and w.settled("ws")
            await asyncio.wrap_future(first)
            await asyncio.wrap_future(second)
        finally:
            for g in gates:
                g.set()
            await w.close()

    asyncio.run(main())


def test_a_search_waits_only_for_the_files_its_filters_let_through(tmp_path: Path) -> None:
    from memoryd.files.layout import Layout
    from memoryd.index.freshness import Freshness
    from memoryd.index.types import SearchRequest

    root = tmp_path / "ws"
    fresh = Freshness(Layout(root, sessions=True))
    day, topic, transcript = (
        root / "memory" / "2024-05-01.md",
        root / "memory" / "topics" / "x.md",
        root / "sessions" / "s1.jsonl",
    )
    folder, elsewhere = root / "memory" / "topics", tmp_path / "other" / "MEMORY.md"

    def waits_for(**kw: Any) -> set[Path]:
        concerns = fresh.concerns(SearchRequest("q", **kw))
        paths = {root / "MEMORY.md", day, topic, transcript, folder, elsewhere}
        return {p for p in paths if concerns(p)}

    everything = {root / "MEMORY.md", day, topic, transcript, folder}
    assert waits_for(sources=("memory", "sessions")) == everything
    assert waits_for() == everything - {transcript}  # notes only, by default
    assert waits_for(sources=("sessions",)) == {transcript, folder}
    assert waits_for(path_prefix="memory/2024") == {day, folder}
    # Dated searches: a daily file by its name's date; a transcript's date is inside it.
    dated = {"sources": ("memory", "sessions")}
    assert waits_for(since="2024-05-01", **dated) == {day, transcript, folder}
    assert waits_for(until="2024-04-30", **dated) == {transcript, folder}
    assert waits_for(since="2024-01-01", until="2024-12-31") == {day, folder}


def test_a_search_of_notes_does_not_wait_for_a_transcript_being_indexed(
    make_index: IndexFactory,
) -> None:
    from memoryd.index.types import SearchRequest

    make_index.write("memory/held.md", "# held\n\nheld notes\n")
    make_index.write("sessions/s1.jsonl", "")
    ix = make_index({"index": {"sessions": True}})
    ix.sync()
    gate = threading.Event()
    transcript = make_index.ws / "sessions" / "s1.jsonl"

    async def main() -> None:
        w = Watcher(debounce_ms=50)
        await w.set_targets([WatchTarget("ws", ix.root, ix)])
        try:
            held = ix.submit_sync(
                [make_index.ws / "memory" / "held.md"], progress=lambda _p: gate.wait(60)
            )
            w.submit("ws", [transcript])  # behind `held`
            notes = ix.freshness.concerns(SearchRequest("q"))
            both = ix.freshness.concerns(SearchRequest("q", sources=("memory", "sessions")))
            assert await asyncio.wait_for(w.wait_synced("ws", 60, notes), 20)
            with_sessions = asyncio.create_task(w.wait_synced("ws", 60, both))
            await asyncio.sleep(0.05)
            assert not with_sessions.done()  # the transcript's sync is held
            gate.set()
            assert await asyncio.wait_for(with_sessions, 20)
            await asyncio.wrap_future(held)
        finally:
            gate.set()
            await w.close()

    asyncio.run(main())
