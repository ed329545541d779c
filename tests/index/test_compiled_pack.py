"""An answer's frame packed by the compiled part (index/_compiled_pack.c: pack_frame) against
msgpack's own packing (protocol.pack, rpc/server.py's Packer): the same bytes for every value
an answer is made of, on the boundaries of each encoding (fixint, uint/int 8..64, fixstr,
str 8/16/32, bin, fixmap/map 16, fixarray/array 16), and None for anything only msgpack
packs or refuses (subclasses, ints past 64 bits, lone surrogates, deep nesting), so the
caller's fallback packs it or raises as before. An install without a compiler has only
msgpack: these tests are skipped there."""

from __future__ import annotations

import enum
import math
import random
import struct
from collections import OrderedDict
from typing import Any

import msgpack
import pytest

from memoryd_client import protocol

compiled = pytest.importorskip("memoryd.index._compiled", reason="not built (no compiler)")

PACKER = msgpack.Packer(use_bin_type=True)


def _msgpack_frame(obj: Any) -> bytes:
    body = PACKER.pack(obj)
    return struct.pack(">I", len(body)) + body


INTS = [0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63]
INTS += [2**64 - 1, -1, -31, -32, -33, -127, -128, -129, -32767, -32768, -32769]
INTS += [-(2**31) + 1, -(2**31), -(2**31) - 1, -(2**63) + 1, -(2**63)]
FLOATS = [0.0, -0.0, 1.5, -2.25, 5e-324, 1e300, math.inf, -math.inf, math.nan, 0.1 + 0.2]
STRS = ["", "a", "x" * 31, "x" * 32, "x" * 255, "x" * 256, "x" * 65535, "x" * 65536, "é", "日本"]
STRS += ["é" * 15, "é" * 16, "é" * 128, "🙂" * 64, "a\x00b", "line\nline"]


def _random(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10 if depth < 3 else 6)
    if kind == 0:
        n = rng.choice(INTS) + rng.choice([0, 0, 1, -1])
        return n if -(2**63) <= n < 2**64 else 0
    if kind == 1:
        return rng.choice([*FLOATS, rng.uniform(-1e6, 1e6), rng.random()])
    if kind == 2:
        return rng.choice(STRS)[: rng.randrange(0, 300)] + rng.choice(["", "ü", "z"])
    if kind == 3:
        return rng.choice([None, True, False])
    if kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 255, 256, 300])))
    if kind == 5:
        return rng.randrange(-(2**63), 2**64)
    if kind in (6, 7):
        return [_random(rng, depth + 1) for _ in range(rng.choice([0, 1, 15, 16, 17]))]
    if kind == 8:
        return tuple(_random(rng, depth + 1) for _ in range(rng.randrange(0, 20)))
    n = rng.choice([0, 1, 15, 16, 17])
    return {rng.choice([f"k{i}", i, None, 1.5, b"k"]): _random(rng, depth + 1) for i in range(n)}


@pytest.mark.parametrize("value", [*INTS, *FLOATS, *STRS, None, True, False, b"", b"\xff" * 300])
def test_each_kind_of_value_is_packed_as_msgpack_packs_it(value: Any) -> None:
    frame = compiled.pack_frame(value)
    assert frame == _msgpack_frame(value) == protocol.pack(value)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 65535, 65536])
def test_maps_arrays_and_bins_of_every_length_class(n: int) -> None:
    for value in ({i: i for i in range(n)}, list(range(n)), tuple(range(n)), b"b" * n):
        assert compiled.pack_frame(value) == _msgpack_frame(value)


def test_random_answers_are_packed_byte_for_byte_as_msgpack_packs_them() -> None:
    rng = random.Random(38)
    for _ in range(3000):
        message = {"id": rng.randrange(2**31), "ok": True, "result": _random(rng)}
        assert compiled.pack_frame(message) == _msgpack_frame(message)


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


class Kind(enum.IntEnum):
    ONE = 1


class Word(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        2**64,  # msgpack raises: too large
        -(2**63) - 1,
        "\ud800",  # a lone surrogate: msgpack raises
        Kind.ONE,  # subclasses: msgpack packs them as their base, the C leaves them to it
        Word("w"),
        OrderedDict(a=1),
        bytearray(b"x"),
        object(),
        _nested(70),  # msgpack packs it (its limit is 511), the C leaves it
    ],
)
def test_what_only_msgpack_packs_or_refuses_is_left_to_it(value: Any) -> None:
    assert compiled.pack_frame({"result": {"results": [value]}}) is None
    assert not _raises(lambda: compiled.pack_frame(value))


def _raises(f: Any) -> bool:
    try:
        f()
    except Exception:
        return True
    return False
