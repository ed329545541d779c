"""The merge rules on their own (no daemon, no git): daily notes as a union in time order,
each line once; USER.md and MEMORY.md three-way with keys; the ledger by record identity;
a remote holding a password refused. The two-daemon tests exercise them end to end."""

from __future__ import annotations

import json

import pytest

from memoryd.errors import InvalidParams
from memoryd.files.lines import line_key
from memoryd.sync.merge_daily import Sides
from memoryd.sync.merge_file import merge_file
from memoryd.sync.merge_ledger import LedgerView, merge_ledgers, parse_records
from memoryd.sync.paths import CURATED, DAILY, LEDGER, kind_of
from memoryd.sync.settings import check_remote

DAY = "memory/2026-03-02.md"


def add(path: str, line: str, at: float, origin: str = "owner") -> str:
    rec = {"v": 1, "op": "add", "k": line_key(line), "path": path, "origin": origin, "at": at}
    return json.dumps(rec, separators=(",", ":"))


def sides(path: str, records: list[str], ours_time: float = 0.0, theirs_time: float = 0.0) -> Sides:
    data = "".join(r + "\n" for r in records).encode()
    view = LedgerView.of(parse_records(data))
    return Sides(path, view, "laptop", "desktop", ours_time, theirs_time, "2026-03-02")


def merged(kind: str, base: str | None, ours: str | None, theirs: str | None, s: Sides) -> str:
    enc = [None if x is None else x.encode() for x in (base, ours, theirs)]
    out = merge_file(kind, enc[0], enc[1], enc[2], s)
    assert out.data is not None
    return out.data.decode()


def test_daily_notes_merge_as_a_union_in_time_order_each_line_once() -> None:
    base = "# 2026-03-02\n\n- morning standup\n"
    # Each host appended blocks; the ledger says when each line was written.
    ours = base + "\n- laptop at 10:00\n\n- both wrote this\n\n- laptop at 12:00\n"
    theirs = base + "\n- desktop at 11:00\n\n- both wrote this\n\n- desktop at 13:00\n"
    at = {
        "- laptop at 10:00": 10.0,
        "- desktop at 11:00": 11.0,
        "- laptop at 12:00": 12.0,
        "- desktop at 13:00": 13.0,
        "- both wrote this": 11.5,
    }
    s = sides(DAY, [add(DAY, line, t) for line, t in at.items()])
    text = merged(kind_of(DAY), base, ours, theirs, s)
    lines = [x for x in text.split("\n") if x.startswith("- ")]
    assert lines == [
        "- morning standup",
        "- laptop at 10:00",
        "- desktop at 11:00",
        "- both wrote this",
        "- laptop at 12:00",
        "- desktop at 13:00",
    ]
    assert "<<<<<<<" not in text and text.endswith("\n")
    # The same merge from the other host's side gives the same lines in the same order.
    other = merged(DAILY, base, theirs, ours, s)
    assert [x for x in other.split("\n") if x.startswith("- ")] == lines


def test_a_daily_line_one_side_removed_stays_removed() -> None:
    base = "- keep\n- forgotten on the laptop\n"
    ours = "- keep\n"
    theirs = "- keep\n- forgotten on the laptop\n- the desktop's new line\n"
    text = merged(DAILY, base, ours, theirs, sides(DAY, []))
    assert "forgotten on the laptop" not in text
    assert "- keep" in text and "the desktop's new line" in text


def test_user_md_both_sides_change_a_keyed_line_the_newer_stands() -> None:
    path = "USER.md"
    base = "# User\n\n- editor: vim <!-- key: editor -->\n- lives in Lyon\n"
    ours = base.replace("vim", "helix")
    theirs = base.replace("vim", "emacs")
    newer = theirs.split("\n")[2]
    s = sides(path, [add(path, ours.split("\n")[2], 100.0), add(path, newer, 200.0)])
    assert kind_of(path) == CURATED
    text = merged(CURATED, base, ours, theirs, s)
    assert "editor: emacs" in text and "editor: helix" not in text
    assert "memoryd sync conflict" not in text and "- lives in Lyon" in text


def test_user_md_an_unkeyed_clash_keeps_both_under_a_note() -> None:
    base = "# User\n\n- lives in Lyon\n"
    ours = base.replace("Lyon", "Paris")
    theirs = base.replace("Lyon", "Berlin")
    out = merge_file(CURATED, base.encode(), ours.encode(), theirs.encode(), sides("USER.md", []))
    assert out.notes == 1 and out.data is not None
    text = out.data.decode()
    assert "lives in Paris" in text and "lives in Berlin" in text
    assert "memoryd sync conflict" in text and "<<<<<<<" not in text


def test_ledger_records_merge_by_identity_ordered_by_time() -> None:
    one, two, three = (add(DAY, f"- line {i}", float(i)) for i in (1, 2, 3))
    dropped = add(DAY, "- compacted away on the laptop", 0.5)
    base = f"{dropped}\n{one}\n"
    ours = f"{one}\n{three}\n"  # the laptop compacted one record and added another
    theirs = f"{dropped}\n{one}\n{two}\n{three}\n"  # the desktop saw the same add
    out = merge_ledgers(base.encode(), ours.encode(), theirs.encode()).decode()
    assert out.split("\n")[:-1] == [one, two, three]  # each once, by time; dropped stays out
    assert merged(LEDGER, base, ours, theirs, sides(DAY, [])) == out


@pytest.mark.parametrize(
    "url",
    ["https://me:hunter2@github.com/me/memory.git", "ssh://git:pw@host/memory.git"],
)
def test_a_remote_with_a_password_is_refused(url: str) -> None:
    with pytest.raises(InvalidParams, match="password"):
        check_remote(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/me/memory.git",
        "git@gitlab.com:me/memory.git",
        "ssh://me@host/srv/memory.git",
        "file:///srv/memory.git",
    ],
)
def test_remotes_whose_credentials_are_gits_own_are_taken(url: str) -> None:
    assert check_remote(url) == url
