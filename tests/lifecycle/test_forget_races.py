"""A forget racing writers outside the daemon (an editor, ``echo >>``, an agent's own file
tool): it never answers a line removed that is still on disk, and no outside write is lost."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from daemon_util import DaemonThread
from memoryd.files.layout import Layout
from memoryd.files.locks import FileLocks
from memoryd.lifecycle import forget as select
from memoryd.lifecycle.forget_run import ForgetConflict, apply_forget
from memoryd_client import MemoryClient, RemoteError

pytestmark = pytest.mark.timeout(180)

DAILY = "memory/2025-03-12.md"


def outside_writer(path: Path, stop: threading.Event, wrote: list[str]) -> None:
    """Append a line at a time, as ``echo >> file`` does (open, append, close)."""
    n = 0
    while not stop.is_set():
        line = f"- outside note {n} about the weather"
        with open(path, "a") as f:
            f.write(line + "\n")
        wrote.append(line)
        n += 1
        stop.wait(0.001)  # a busy writer, not a spinning one


def test_a_forget_racing_outside_appends_never_claims_a_line_still_on_disk(
    md_home: Path,
) -> None:
    ws = md_home / "ws"
    (ws / "memory").mkdir(parents=True)
    day = ws / DAILY
    targets = [f"- secret plan number {i} for the kiwi launch" for i in range(12)]
    filler = [f"- filler line {i} of the day" for i in range(4000)]
    day.write_text("\n".join(targets + filler) + "\n")
    stop = threading.Event()
    wrote: list[str] = []
    claimed: list[str] = []
    refused: list[dict[str, object]] = []
    with DaemonThread(md_home, {"workspaces": [{"path": str(ws), "name": "ws"}]}) as d:
        writer = threading.Thread(target=outside_writer, args=(day, stop, wrote))
        writer.start()
        try:
            with MemoryClient(d.socket_path) as c:
                for i, target in enumerate(targets):
                    # The target is always line 1: the ones before it are gone (or refused).
                    lines = day.read_text().splitlines()
                    n = lines.index(target) + 1
                    try:
                        done = c.forget(workspace="ws", path=DAILY, lines=str(n), purge=True)
                    except RemoteError as exc:
                        assert exc.code in ("conflict", "invalid_params"), exc
                        refused.append({"target": target, "data": exc.data})
                        continue
                    removed = [line for r in done.removed for line in r.text.splitlines()]
                    assert removed == [target]
                    # What was answered removed has left the disk.
                    assert target not in day.read_text().splitlines(), i
                    claimed.append(target)
        finally:
            stop.set()
            writer.join()
    text = day.read_text().splitlines()
    assert claimed and all(t not in text for t in claimed), refused[:2]
    # No outside append was lost, none doubled.
    assert [w for w in wrote if text.count(w) != 1] == []
    assert len(claimed) + len(refused) == len(targets)


def test_a_forget_planned_before_an_outside_edit_cuts_its_line_where_it_is_now(
    tmp_path: Path,
) -> None:
    (tmp_path / "memory").mkdir()
    day = tmp_path / DAILY
    day.write_text("- one\n- two\n- the line to forget\n- four\n")
    layout = Layout(tmp_path)
    sel = select.by_range(layout, DAILY, 3, 3)
    day.write_text("- an editor added this first\n" + day.read_text())  # not an append
    done = apply_forget(tmp_path, sel, FileLocks(), purge=True, keep_days=7)
    assert day.read_text() == "- an editor added this first\n- one\n- two\n- four\n"
    assert done.answer["removed"] == [
        {"path": DAILY, "lines": ["4"], "text": "- the line to forget"}
    ]


def test_lines_edited_meanwhile_are_named_not_removed_and_the_rest_goes(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    a, b = tmp_path / "MEMORY.md", tmp_path / DAILY
    a.write_text("- keep a\n- forget a\n")
    b.write_text("- keep b\n- forget b\n")
    layout = Layout(tmp_path)
    sel = select.Selection(
        [
            *select.by_range(layout, "MEMORY.md", 2, 2).removals,
            *select.by_range(layout, DAILY, 2, 2).removals,
        ]
    )
    b.write_text("- keep b\n- forget b, edited by hand\n")
    with pytest.raises(ForgetConflict) as err:
        apply_forget(tmp_path, sel, FileLocks(), purge=False, keep_days=7)
    assert a.read_text() == "- keep a\n"
    assert b.read_text() == "- keep b\n- forget b, edited by hand\n"
    data = err.value.data
    assert data is not None
    assert [(r["path"], r["lines"]) for r in data["removed"]] == [("MEMORY.md", ["2"])]
    assert [(r["path"], r["lines"], r["text"]) for r in data["not_removed"]] == [
        (DAILY, ["2"], "- forget b")
    ]
    assert err.value.code == "conflict"
