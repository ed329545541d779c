"""Recall's trigger lane in-process: lexical and vector matches, the threshold, the cap,
and the project gate."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memoryd.files.annotations import parse_line
from memoryd.index.line_meta import LineMeta, LineMetaMap
from memoryd.index.search.triggers import MAX_TRIGGERED, MIN_COSINE, TriggerLane


def lane(root: Path, lines: list[str]) -> TriggerLane:
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n")
    meta = LineMetaMap()
    rows = {}
    for n, line in enumerate(lines, 1):
        _, ann = parse_line(line)
        if ann is not None:
            rows[n] = LineMeta(ann.importance, ann.triggers, ann.project)
    meta.stage("MEMORY.md", rows)
    meta.commit("MEMORY.md")
    return TriggerLane(meta, root)


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_phrase_in_the_prompt_triggers_its_line_and_a_near_word_does_not(
    tmp_path: Path,
) -> None:
    tl = lane(tmp_path, ["- Gateway on loopback. <!-- trigger: gateway setup -->"])
    (hit,) = tl.match("Starting the GATEWAY   setup now", frozenset())
    assert (hit.line, hit.text, hit.phrase, hit.score) == (
        1,
        "- Gateway on loopback.",
        "gateway setup",
        1.0,
    )
    assert tl.match("the gateways setup", frozenset()) == []  # whole words only


def test_by_meaning_only_above_the_threshold(tmp_path: Path) -> None:
    tl = lane(tmp_path, ["- a <!-- trigger: deploy -->", "- b <!-- trigger: billing -->"])
    vectors = {"deploy": unit(1, 0, 0), "billing": unit(0, 1, 0)}
    near = unit(1, 0.3, 0)  # cosine with deploy ~0.96
    found = tl.match("ship it to production", frozenset(), near, vectors.__getitem__)
    assert [(t.phrase, round(t.score, 2)) for t in found] == [("deploy", 0.96)]
    far = unit(1, 1, 1.5)  # cosine ~0.49 with both: below MIN_COSINE
    assert all(float(far @ v) < MIN_COSINE for v in vectors.values())
    assert tl.match("something else", frozenset(), far, vectors.__getitem__) == []


def test_at_most_three_lines_and_a_tagged_line_only_while_its_project_is_active(
    tmp_path: Path,
) -> None:
    lines = [f"- fact {i} <!-- trigger: release --> <!-- importance: {i + 1} -->" for i in range(5)]
    lines.append("- tagged <!-- trigger: release --> <!-- project: github.com/acme/api -->")
    tl = lane(tmp_path, lines)
    found = tl.match("cut the release", frozenset())
    # The most important first; the tagged line never while its project is not active.
    assert [t.text for t in found] == ["- fact 4", "- fact 3", "- fact 2"]
    assert len(found) == MAX_TRIGGERED
    tagged = lane(tmp_path, [lines[-1]])
    assert tagged.match("cut the release", frozenset()) == []
    assert [
        t.text for t in tagged.match("cut the release", frozenset({"github.com/acme/api"}))
    ] == ["- tagged"]
