"""The chunking tokenizer is loaded on demand and let go when unused (~14 MB): an index
whose files did not change never loads it, and a changed file loads it again."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine_util import IndexFactory, paths, search
from memoryd.embeddings import tokenizer
from memoryd.index import token_costs


def test_release_drops_the_tokenizer_and_the_word_costs_built_on_it() -> None:
    tok = tokenizer.load_tokenizer()
    assert tokenizer.load_tokenizer() is tok
    token_costs.count_tokens(["several words to count"], tok)
    assert token_costs._caches
    assert not tokenizer.release_tokenizer(idle_s=3600)  # just used: kept
    assert tokenizer.release_tokenizer(idle_s=0)
    assert not token_costs._caches
    assert tokenizer.load_tokenizer() is not tok
    assert token_costs.count_tokens(
        ["several words to count"], tokenizer.load_tokenizer()
    ) == token_costs.count_tokens(["several words to count"], tok)


def test_it_goes_by_itself_once_idle_and_indexing_loads_it_again(
    make_index: IndexFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokenizer.release_tokenizer()
    monkeypatch.setattr(tokenizer, "RELEASE_AFTER_S", 0.3)
    make_index.write("memory/2024-05-01.md", "- planted basil\n")
    ix = make_index()
    ix.sync()
    assert tokenizer._tokenizer is not None
    deadline = time.monotonic() + 10
    while tokenizer._tokenizer is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tokenizer._tokenizer is None and tokenizer._timer is None  # no timer left behind
    make_index.write("memory/2024-05-02.md", "- watered the basil again\n")
    ix.sync()
    assert paths(search(ix, "watered")) == ["memory/2024-05-02.md"]


def test_an_unchanged_index_is_opened_and_searched_without_loading_it(
    make_index: IndexFactory, tmp_path: Path
) -> None:
    make_index.write("MEMORY.md", "# Memory\n\nThe deploy target is nomad.\n")
    ix = make_index()
    ix.sync()
    ix.close()
    make_index.made.remove(ix)
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from memoryd.runtime.config import config_from_mapping
        from memoryd.index.types import SearchRequest
        from memoryd.index.workspace import WorkspaceIndex
        cfg = config_from_mapping({{"embedding": {{"provider": "none"}}}})
        ix = WorkspaceIndex(Path({str(make_index.ws)!r}), Path({str(make_index.db)!r}), cfg,
                            None, "none")
        ix.open()
        ix.sync()
        hits = ix.search(SearchRequest("nomad", mode="keyword")).results
        print([h.path for h in hits], "tokenizers" in sys.modules)
        ix.close()
    """)
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout.strip().splitlines()[-1] == "['MEMORY.md'] False"
