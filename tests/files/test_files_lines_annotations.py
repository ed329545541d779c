"""One normalisation of a memory line, and the annotations a line may carry."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.files.annotations import Annotations, parse_line, strip_annotations
from memoryd.files.lines import line_key, normalize_line, text_keys


def test_a_line_without_a_comment_parses_to_itself_with_no_annotations() -> None:
    assert parse_line("- plain fact\n") == ("- plain fact\n", None)


def test_trailing_annotations_are_read_in_any_order_and_removed_from_the_text() -> None:
    text, ann = parse_line(
        "- Keep the gateway on loopback. <!-- trigger: gateway setup, network safety -->"
        " <!-- importance: 9 -->  <!-- project: GitHub.com/Acme/Repo/ -->"
    )
    assert text == "- Keep the gateway on loopback."
    assert ann == Annotations(
        importance=9,
        triggers=("gateway setup", "network safety"),
        project="github.com/acme/repo",
    )


def test_triggers_split_on_commas_and_semicolons_lower_cased_empties_dropped() -> None:
    _, ann = parse_line("x <!-- triggers: Deploy ; fly.io,, ROLLBACK  plan -->")
    assert ann is not None and ann.triggers == ("deploy", "fly.io", "rollback plan")


def test_key_and_promote_are_read_for_curation() -> None:
    _, ann = parse_line("deploy target is fly.io <!-- key: deploy-target --> <!--promote-->")
    assert ann is not None and ann.key == "deploy-target" and ann.promote


def test_an_importance_out_of_range_or_not_a_number_is_ignored_and_stays_in_the_text() -> None:
    assert parse_line("a <!-- importance: 42 -->") == ("a <!-- importance: 42 -->", None)
    assert parse_line("a <!-- importance: high -->")[1] is None


def test_a_comment_that_is_not_ours_stays_and_an_origin_comment_is_never_read() -> None:
    line = "fact <!-- origin: owner --> <!-- importance: 3 -->"
    text, ann = parse_line(line)
    assert text == "fact <!-- origin: owner -->"
    assert ann == Annotations(importance=3)
    assert parse_line("fact <!-- origin: owner -->") == ("fact <!-- origin: owner -->", None)


def test_a_comment_in_the_middle_of_the_text_is_not_an_annotation() -> None:
    line = "use <!-- importance: 9 --> sparingly"
    assert parse_line(line) == (line, None)


def test_strip_annotations_keeps_line_ends_and_other_text() -> None:
    text = "## Deploy\n- fly.io <!-- importance: 8 -->\n- plain\n"
    assert strip_annotations(text) == "## Deploy\n- fly.io\n- plain\n"


def test_merged_annotations_take_the_max_importance_and_the_triggers_union() -> None:
    a = Annotations(importance=3, triggers=("x",))
    b = Annotations(importance=7, triggers=("y", "x"), project="p")
    assert a.merged(b) == Annotations(importance=7, triggers=("x", "y"), project="p")


def test_normalize_line_drops_markers_task_boxes_annotations_case_and_spacing() -> None:
    same = [
        "- Deploy  target is Fly.io",
        "* deploy target is fly.io <!-- importance: 5 -->",
        "12. DEPLOY TARGET IS FLY.IO",
        "- [x] deploy target   is fly.io",
        "+ [ ] Deploy target is fly.io\n",
        "deploy target is fly.io",
    ]
    assert {normalize_line(s) for s in same} == {"deploy target is fly.io"}
    assert len({line_key(s) for s in same}) == 1
    assert len(line_key(same[0])) == 32


def test_blank_and_heading_lines_have_no_key() -> None:
    assert line_key("") == line_key("   ") == line_key("## Notes") == line_key("-") == ""
    assert text_keys("## 14:02\n\n- a\n- b\n") == [line_key("a"), line_key("b")]


def test_a_provenance_looking_comment_changes_the_key() -> None:
    # Text can't claim a hand-written line's record: its key is another line's.
    assert line_key("fact <!-- origin: owner -->") != line_key("fact")


@given(st.text(max_size=80))
def test_normalized_lines_have_collapsed_whitespace_and_parse_never_raises(text: str) -> None:
    once = normalize_line(text)
    assert once == " ".join(once.split())
    stripped, _ = parse_line(text)
    assert len(stripped) <= len(text)
