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


def _ledger_compaction() -> JobFn:
    from memoryd.jobs import ledger_compaction

    return ledger_compaction.run


def _settings_hippocampus(c: Config) -> JobSettings:
    return c.jobs.hippocampus


def _settings_retention(c: Config) -> JobSettings:
    return c.jobs.retention


def _settings_fallback(c: Config) -> JobSettings:
    return c.jobs.fallback_summary


def _settings_ledger(c: Config) -> JobSettings:
    return c.jobs.ledger_compaction


JOBS: Final[Mapping[str, JobSpec]] = {
    spec.name: spec
    for spec in (
        JobSpec(
            "hippocampus",
            "consolidate recent daily notes into MEMORY.md (LLM)",
            True,
            _settings_hippocampus,
            _hippocampus,
        ),
        JobSpec(
            "retention",
            "archive or delete old session transcripts",
            False,
            _settings_retention,
            _retention,
        ),
        JobSpec(
            "fallback_summary",
            "summarise idle sessions that left no daily note (LLM)",
            True,
            _settings_fallback,
            _fallback_summary,
        ),
        JobSpec(
            "ledger_compaction",
            "drop provenance records of lines no longer on disk and old tombstones",
            False,
            _settings_ledger,
            _ledger_compaction,
        ),
    )
}


def llm_jobs_without_llm(config: Config, env: Mapping[str, str]) -> tuple[list[str], str] | None:
    """The enabled jobs that need an LLM and the reason there is none, or None when an
    LLM is configured (or no such job is enabled)."""
    from memoryd.jobs.llm_config import llm_problem

    problem = llm_problem(config.llm, env)
    jobs = [s.name for s in JOBS.values() if s.uses_llm and s.settings(config).enabled]
    return (jobs, problem) if problem and jobs else None
