"""memoryd_client.paths.Paths, written out: equal, hashed, shown and frozen as the frozen
dataclass of its five fields it replaces (which compiled six methods at every start)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memoryd_client.paths import Paths, default_paths


@dataclasses.dataclass(frozen=True)
class Twin:
    config_file: Path
    data_dir: Path
    state_dir: Path
    runtime_dir: Path
    log_dir: Path


def _values(p: Paths) -> tuple[Path, ...]:
    return (p.config_file, p.data_dir, p.state_dir, p.runtime_dir, p.log_dir)


def test_paths_are_equal_hashed_and_shown_as_a_frozen_dataclass() -> None:
    p = default_paths({"MEMORYD_HOME": "/tmp/h"})
    q = default_paths({"MEMORYD_HOME": "/tmp/other"})
    twin_p, twin_q = Twin(*_values(p)), Twin(*_values(q))
    assert repr(p) == repr(twin_p).replace("Twin(", "Paths(")
    assert hash(p) == hash(twin_p)
    assert (p == default_paths({"MEMORYD_HOME": "/tmp/h"})) and p != q and twin_p != twin_q
    assert p != twin_p and p != _values(p)  # another class is never equal
    assert p.socket == Path("/tmp/h/run/memoryd.sock") and p.index_dir == Path("/tmp/h/data/index")
    assert Paths(**{f.name: getattr(p, f.name) for f in dataclasses.fields(Twin)}) == p


def test_paths_are_frozen() -> None:
    p = default_paths({"MEMORYD_HOME": "/tmp/h"})
    with pytest.raises(AttributeError):
        p.data_dir = Path("/elsewhere")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.log_dir  # type: ignore[misc]
    with pytest.raises(AttributeError):
        p.other = 1  # type: ignore[attr-defined]
    assert p.data_dir == Path("/tmp/h/data")


def test_paths_copy_and_pickle_as_the_dataclass_did() -> None:
    """Slots and a __setattr__ that refuses: the default copy and unpickling set each slot
    through it and failed; the frozen dataclass copied, deep-copied and pickled."""
    import copy
    import pickle

    p = default_paths({"MEMORYD_HOME": "/tmp/h"})
    for made in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert made == p and type(made) is Paths and _values(made) == _values(p)
