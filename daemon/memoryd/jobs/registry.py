"""The jobs memoryd knows: name, whether it needs the LLM, its config table, its code.

Implementations are imported on first run: they bring the ``openai`` client, which the
daemon should not pay for at startup (the socket must accept within milliseconds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from memoryd.jobs.base import JobFn, JobSettings, JobSpec
from memoryd.runtime.config import Config


def _hippocampus() -> JobFn:
    from memoryd.jobs import hippocampus

    return hippocampus.run


def _retention() -> JobFn:
    from memoryd.jobs import retention

    return retention.run


def _fallback_summary() -> JobFn:
    from memoryd.jobs import fallback_summary

    return fallback_summary.run


def _settings_hippocampus(c: Config) -> JobSettings:
    return c.jobs.hippocampus


def _settings_retention(c: Config) -> JobSettings:
    return c.jobs.retention


def _settings_fallback(c: Config) -> JobSettings:
    return c.jobs.fallback_summary


JOBS: Final[Mapping[str, JobSpec]] = {
    spec.name: spec for spec in (
        JobSpec("hippocampus", "consolidate recent daily notes into MEMORY.md (LLM)", True,
                _settings_hippocampus, _hippocampus),
        JobSpec("retention", "archive or delete old session transcripts", False,
                _settings_retention, _retention),
        JobSpec("fallback_summary", "summarise idle sessions that left no daily note (LLM)",
                True, _settings_fallback, _fallback_summary),
    )
}
