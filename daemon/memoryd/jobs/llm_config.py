"""Whether an LLM is configured, without importing the ``openai`` client (status, jobs.list)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memoryd.openai_endpoint import safe_url
from memoryd.runtime.config import LlmConfig, resolve_secret


def llm_problem(cfg: LlmConfig, env: Mapping[str, str]) -> str | None:
    """Why the LLM cannot be used as configured, or None when it can."""
    key = resolve_secret(cfg.api_key, cfg.api_key_env, dict(env))
    if not cfg.model:
        return "set [llm] model (and base_url for a local server, or an api key for OpenAI)"
    if not cfg.base_url and not key:
        hint = f" (${cfg.api_key_env} is empty)" if cfg.api_key_env else ""
        return f"set [llm] base_url, or api_key / api_key_env for OpenAI{hint}"
    return None


def llm_status(cfg: LlmConfig, env: Mapping[str, str]) -> dict[str, Any]:
    problem = llm_problem(cfg, env)
    return {
        "configured": problem is None,
        "model": cfg.model,
        "base_url": safe_url(cfg.base_url) if cfg.base_url else "",
        "reason": problem,
    }
