"""What the engine does not import until it needs it: a daemon answering its first search
from an existing index pays for none of these (issue 38, spawn -> first answer)."""

from __future__ import annotations

import subprocess
import sys

# Only a large bulk run starts worker processes (index/prepare.py); numpy comes with the
# in-memory copies' load or a provider's vectors (runtime/lazy_numpy.py).
ON_DEMAND = (
    "multiprocessing",
    "concurrent.futures.process",
    "numpy",
    "numpy.typing",
)


def test_the_engine_imports_none_of_what_a_search_does_not_use() -> None:
    code = (
        "import sys, memoryd.index.workspace, memoryd.embeddings.factory; "
        f"print(' '.join(m for m in {ON_DEMAND!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == []


def test_sqlite_vec_loads_from_the_path_its_package_gives_without_importing_the_package() -> None:
    # sqlite_vec's __init__ imports sqlite3 and numpy.typing: the probe finds the file alone.
    code = (
        "import sys, memoryd.sqlite as s; v = s.probe_vec(); "
        "print(v.ok, 'sqlite_vec' in sys.modules, 'sqlite3' in sys.modules, "
        "'numpy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "False", "False", "False"]
    import sqlite_vec

    from memoryd.sqlite import vec_extension_path

    assert vec_extension_path() == sqlite_vec.loadable_path()


# What a search before the copies' load runs: the empty keyword copy asked (and its stats,
# which a scan reads), a chunk's line stems made and scored (compiled or not).
BEFORE_THE_COPIES = """
import sys, apsw
from memoryd.index.keyword.mirror import KeywordMirror
from memoryd.index.keyword.text import FTS_TOKENIZER
from memoryd.index.search import snippets
if sys.argv[1] == "python":
    snippets.compiled = None
porter = apsw.Connection(":memory:").fts5_tokenizer(*FTS_TOKENIZER)
def tokenize(raw):
    return porter(raw, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True,
                  include_colocated=False)
m = KeywordMirror(1 << 20)
assert (m.top(["tea"], 5), m.doc_freqs(["tea"]), m.scan, m.bytes()) == (None, None, "loading", 0)
assert m.stats()["chunks"] == 0
chunk = snippets.LineStems().get(1, "the tea\\ngarden tea", tokenize)
if sys.argv[1] == "compiled":
    assert snippets.line_scores([chunk], {"tea": 2.0, "garden": 1.0}) == [[2.0, 3.0]]
print("numpy" in sys.modules)
"""


def test_a_search_before_the_copies_load_needs_no_numpy() -> None:
    for path in ("compiled", "python"):
        out = subprocess.run(
            [sys.executable, "-c", BEFORE_THE_COPIES, path], capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["False"]
