"""What memory costs each agent: the answer to ``stats`` (``MemoryClient.stats()``,
``memctl stats``; the daemon counts it, docs/cli.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from memoryd_client._wire import _Wire

# The metrics, in the order memctl stats shows them (docs/cli.md says what each counts).
METRICS = (
    "recalls",
    "recall_empty",
    "recall_tokens",
    "digests",
    "digest_tokens",
    "llm_tokens_flush",
    "llm_tokens_hippocampus",
    "llm_tokens_fallback_summary",
    "recalled_searched",
    "recalled_cited",
)


@dataclass
class UsageRow(_Wire):
    """One agent's counts in one workspace on one day."""

    _what: ClassVar[str] = "stats row"

    day: str
    agent: str
    workspace: str = ""
    metrics: dict[str, int] = field(default_factory=dict)


@dataclass
class StatsResult(_Wire):
    """``rows``: newest day first; ``since``: the first day counted (``days`` ago)."""

    _what: ClassVar[str] = "stats result"

    days: int
    since: str
    rows: list[UsageRow] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def totals(self) -> dict[tuple[str, str], dict[str, int]]:
        """Per (agent, workspace): each metric summed over the days."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        for row in self.rows:
            sums = out.setdefault((row.agent, row.workspace), {})
            for name, value in row.metrics.items():
                sums[name] = sums.get(name, 0) + value
        return out
