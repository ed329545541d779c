"""The all-MiniLM-L6-v2 WordPiece tokenizer shipped as package data (see assets/NOTICE.md).

The chunker counts tokens with it whatever the provider, so chunk boundaries do not depend on
which embedding endpoint is configured.
"""

from __future__ import annotations

import functools
from pathlib import Path

from tokenizers import Tokenizer

ASSETS = Path(__file__).parent / "assets"
TOKENIZER_FILE = ASSETS / "tokenizer.json"


@functools.cache
def load_tokenizer() -> Tokenizer:
    """A tokenizer without padding or truncation, for counting and offsets."""
    tok = Tokenizer.from_file(str(TOKENIZER_FILE))
    tok.no_padding()
    tok.no_truncation()
    return tok
