"""The search vocabulary of the protocol (docs/protocol.md, ``search``): its modes, fusions,
sources and ranges, stated once. The client checks arguments against it; the daemon's
params, config and engine import it from here (the client never imports the daemon)."""

from __future__ import annotations

from typing import Final, Literal, get_args

Mode = Literal["hybrid", "vector", "keyword"]
Fusion = Literal["weighted", "rrf"]
Source = Literal["memory", "sessions"]  # markdown notes; JSONL session transcripts

MODES: Final[tuple[Mode, ...]] = get_args(Mode)
FUSIONS: Final[tuple[Fusion, ...]] = get_args(Fusion)
SOURCES: Final[tuple[Source, ...]] = get_args(Source)
SOURCE_MEMORY: Final = "memory"
SOURCE_SESSIONS: Final = "sessions"

DEFAULT_MODE: Final[Mode] = "hybrid"
DEFAULT_FUSION: Final[Fusion] = "weighted"  # the config's default ([search] fusion)
DEFAULT_SOURCES: Final[tuple[Source, ...]] = (SOURCE_MEMORY,)

MAX_RESULTS: Final = 100  # max_results is 1..MAX_RESULTS
MIN_SCORE_RANGE: Final = (0.0, 1.0)  # min_score, and every score in an answer
MAX_QUERY_CHARS: Final = 8192

# Provenance (docs/provenance.md): who a line comes from, most trusted first, and the kind
# of session that wrote it. The daemon's ledger and the client's flags share these.
ORIGINS: Final = ("owner", "agent", "system", "untrusted")
SESSION_KINDS: Final = ("interactive", "cron", "heartbeat", "subagent")
