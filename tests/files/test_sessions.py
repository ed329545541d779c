"""Incremental session-transcript parsing (files/transcripts.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.files.transcripts import parse_transcript


def jl(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def msg(role: str, content: Any, ts: str = "2023-05-08T13:56:00.000Z") -> bytes:
    return jl({"type": "message", "timestamp": ts, "message": {"role": role, "content": content}})


HEADER = jl(
    {
        "type": "session",
        "version": 1,
        "id": "conv-26-s1",
        "timestamp": "2023-05-08T13:56:00.000Z",
        "agent_id": "main",
    }
)


def test_complete_file_gives_user_and_assistant_text_with_physical_lines() -> None:
    data = (
        HEADER
        + msg("user", "Hey Mel!")
        + msg("system", "be nice")
        + jl({"type": "tool_call", "name": "read"})
        + jl({"type": "tool_result"})
        + jl({"type": "compaction"})
        + jl({"type": "model_change", "model": "x"})
        + msg("assistant", "  Hey Caroline!\n", ts="2023-05-08T13:57:00.000Z")
    )
    r = parse_transcript(data)
    assert r.messages == [(2, "user: Hey Mel!"), (8, "assistant: Hey Caroline!")]
    assert (r.consumed, r.lines_consumed) == (len(data), 8)
    assert (r.malformed, r.skipped) == (0, 5)
    assert (r.session_id, r.started_at) == ("conv-26-s1", "2023-05-08T13:56:00.000Z")
    assert r.last_timestamp == "2023-05-08T13:57:00.000Z"


def test_torn_last_line_waits_for_its_newline() -> None:
    first, second = msg("user", "one"), msg("assistant", "two")
    torn = parse_transcript(first + second[:-7])
    assert torn.messages == [(1, "user: one")]
    assert (torn.consumed, torn.lines_consumed, torn.malformed) == (len(first), 1, 0)

    rest = parse_transcript((first + second)[torn.consumed :], first_line=1 + torn.lines_consumed)
    assert rest.messages == [(2, "assistant: two")]
    assert rest.consumed == len(second)

    whole_line_without_newline = parse_transcript(second.rstrip(b"\n"))
    assert (whole_line_without_newline.messages, whole_line_without_newline.consumed) == ([], 0)


def test_malformed_lines_are_counted_and_blank_lines_ignored() -> None:
    data = (
        b"not json\n"
        + b"[1, 2]\n"
        + b"42\n"
        + b'{"type": "message", \n'
        + b"\n   \n"
        + b"[" * 50_000
        + b"\n"
        + msg("user", "still here")
    )
    r = parse_transcript(data)
    assert r.messages == [(8, "user: still here")]
    assert (r.malformed, r.skipped, r.lines_consumed) == (5, 0, 8)


def test_content_blocks_keep_only_text() -> None:
    blocks = [
        {"type": "text", "text": "first"},
        {"type": "image", "url": "x"},
        {"type": "text", "text": "second"},
        {"type": "text", "text": 7},
        "stray",
    ]
    r = parse_transcript(msg("assistant", blocks))
    assert r.messages == [(1, "assistant: first\nsecond")]


def test_messages_without_usable_text_are_skipped() -> None:
    data = (
        msg("user", 42)
        + msg("user", None)
        + msg("user", "   ")
        + msg("user", [])
        + msg("tool", "output")
        + jl({"type": "message", "message": "flat"})
        + jl({"type": "message"})
        + jl({"type": "weird"})
        + jl({"no": "type"})
    )
    r = parse_transcript(data)
    assert (r.messages, r.malformed, r.skipped) == ([], 0, 9)


def test_line_numbers_continue_from_first_line() -> None:
    data = msg("user", "a") + b"\n" + msg("assistant", "b")
    assert parse_transcript(data, first_line=41).messages == [(41, "user: a"), (43, "assistant: b")]


def test_invalid_utf8_never_raises() -> None:
    broken_json = b'\xff\xfe{"type": "message"}\n'
    broken_text = msg("user", "caf\u00e9").replace(b"\\u00e9", b"\xc3")  # truncated é
    r = parse_transcript(broken_json + broken_text + msg("user", "ok"))
    assert r.malformed == 1
    assert r.messages == [(2, "user: caf\ufffd"), (3, "user: ok")]


def test_crlf_and_bom_are_tolerated() -> None:
    data = (
        b"\xef\xbb\xbf" + HEADER.replace(b"\n", b"\r\n") + msg("user", "hi").replace(b"\n", b"\r\n")
    )
    r = parse_transcript(data)
    assert (r.session_id, r.messages, r.malformed) == ("conv-26-s1", [(2, "user: hi")], 0)


def test_empty_input() -> None:
    r = parse_transcript(b"")
    assert (r.messages, r.consumed, r.lines_consumed, r.session_id) == ([], 0, 0, None)


line = st.one_of(
    st.builds(
        msg,
        st.sampled_from(["user", "assistant", "system"]),
        st.one_of(
            st.text(max_size=30),
            st.lists(
                st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
                max_size=3,
            ),
        ),
    ),
    st.just(HEADER),
    st.just(jl({"type": "tool_call"})),
    st.just(b"\n"),
    st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"") + b"\n"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(line, max_size=12), st.binary(max_size=30), st.data())
def test_resuming_at_consumed_equals_parsing_whole(
    lines: list[bytes], torn_tail: bytes, data: st.DataObject
) -> None:
    file = b"".join(lines) + torn_tail.replace(b"\n", b"")
    whole = parse_transcript(file)
    cut = data.draw(st.integers(0, len(file)))
    head = parse_transcript(file[:cut])
    assert head.consumed <= cut
    tail = parse_transcript(file[head.consumed :], first_line=1 + head.lines_consumed)
    assert head.messages + tail.messages == whole.messages
    assert head.consumed + tail.consumed == whole.consumed
    assert head.lines_consumed + tail.lines_consumed == whole.lines_consumed == len(lines)
    assert (head.malformed + tail.malformed, head.skipped + tail.skipped) == (
        whole.malformed,
        whole.skipped,
    )
