"""Hit counts (lifecycle/hits.py): the searches of a moment are written as one batch, and
the counts are those of one write per search."""

from __future__ import annotations

from pathlib import Path

from memoryd.files.lines import line_key
from memoryd.lifecycle.hits import ROWS_PER_SLICE, HitCounter, lull
from memoryd.runtime.foreground import Foreground
from memoryd.runtime.state import StateDB

QUINCE = "- Carol planted quince trees."
TEA = "- Oolong tea ran out."


def test_a_batch_counts_each_search_and_each_distinct_query(tmp_path: Path) -> None:
    state = StateDB(tmp_path / "state.sqlite")
    hits = HitCounter(state)
    root = tmp_path / "ws"
    snippet = [{"snippet": f"{QUINCE}\n{TEA}", "source": "memory"}]
    hits.record(root, "quince trees", snippet)
    hits.record(root, "quince trees", snippet)
    hits.record(root, "who planted quince", snippet)
    hits.record(root, "oolong tea", snippet)
    hits.record(root, "a transcript", [{"snippet": QUINCE, "source": "sessions"}])
    assert hits.wait_idle()  # written now, not after the batch's second
    counts = hits.counts(root, [line_key(QUINCE), line_key(TEA)])
    assert counts == {line_key(QUINCE): (3, 2), line_key(TEA): (1, 1)}
    hits.record(root, "oolong tea", snippet)  # a later batch adds to the same rows
    assert hits.wait_idle()
    assert hits.counts(root, [line_key(TEA)]) == {line_key(TEA): (2, 1)}
    hits.close()
    state.close()


def test_a_batch_larger_than_a_slice_is_written_whole(tmp_path: Path) -> None:
    """Rows are written a slice at a time (ROWS_PER_SLICE) in one transaction: every one
    lands, each counted once per search."""
    state = StateDB(tmp_path / "state.sqlite")
    hits = HitCounter(state)
    root = tmp_path / "ws"
    lines = [f"- Carol planted quince tree number {i}." for i in range(3 * ROWS_PER_SLICE + 5)]
    snippet = [{"snippet": "\n".join(lines), "source": "memory"}]
    hits.record(root, "quince trees", snippet)
    hits.record(root, "planted quince", snippet)
    assert hits.wait_idle()
    keys = [line_key(line) for line in lines]
    assert hits.counts(root, keys) == {k: (2, 2) for k in keys}
    hits.close()
    state.close()


def test_a_batch_waits_for_searches_to_pause_but_a_flush_does_not() -> None:
    assert lull(7, 7, busy=False)  # none begun during the look, none in flight
    assert not lull(7, 8, busy=False)  # searches keep coming
    assert not lull(7, 7, busy=True)  # one is being answered


def test_counts_asked_for_while_searches_keep_coming_are_written_at_once(tmp_path: Path) -> None:
    state = StateDB(tmp_path / "state.sqlite")
    fg = Foreground()
    hits = HitCounter(state, foreground=fg)
    root = tmp_path / "ws"
    fg.begin()  # a search in flight the whole time: no lull comes
    try:
        hits.record(root, "quince trees", [{"snippet": QUINCE, "source": "memory"}])
        assert hits.wait_idle()  # a flush (a job reading the counts) does not wait for one
        assert hits.counts(root, [line_key(QUINCE)]) == {line_key(QUINCE): (1, 1)}
    finally:
        fg.end()
        hits.close()
        state.close()
