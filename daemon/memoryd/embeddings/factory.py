"""Resolve ``[embedding] provider`` (auto | local | openai | none) to a provider and a reason.

The reason is what ``status`` shows, so it names the setting or variable that decided.
Providers are imported lazily: choosing openai should not load onnxruntime, and vice versa.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.embeddings.base import EmbeddingProvider
from memoryd.errors import EmbeddingError
from memoryd.records import Record
from memoryd.runtime.config import EmbeddingConfig

if TYPE_CHECKING:
    from dataclasses import dataclass as frozen_record  # records.py says why

    from memoryd.embeddings.fallback import QueryFallback
else:
    from memoryd.records import frozen_record


@frozen_record(frozen=True, eq=False, repr=False)
class ProviderChoice(Record):
    """What ``auto`` (or an explicit setting) resolved to, and why; ``status`` reports it."""

    provider: EmbeddingProvider | None  # None: keyword-only
    requested: str
    reason: str
    fallback: QueryFallback | None = None  # embeds queries while an openai provider fails


def choose_provider(cfg: EmbeddingConfig, env: Mapping[str, str] | None = None) -> ProviderChoice:
    """Raises EmbeddingError when an explicitly requested provider cannot be used."""
    env = os.environ if env is None else env
    requested = cfg.provider
    if requested == "none":
        return ProviderChoice(None, requested, "embedding.provider = none")
    key, key_source = _api_key(cfg, env)
    if requested == "openai":
        if not key and not cfg.base_url:
            raise EmbeddingError(
                "embedding.provider = openai needs an API key: set embedding.api_key or "
                f"${cfg.api_key_env or 'OPENAI_API_KEY'} (or embedding.base_url for a local "
                "server)"
            )
        return _with_fallback(
            cfg,
            ProviderChoice(
                _openai(cfg, key),
                requested,
                f"embedding.provider = openai ({key_source or 'no key'})",
            ),
        )
    if requested == "local":
        return ProviderChoice(_local(cfg), requested, "embedding.provider = local")
    if key:
        return _with_fallback(
            cfg, ProviderChoice(_openai(cfg, key), requested, f"API key found in {key_source}")
        )
    if cfg.base_url:
        return _with_fallback(
            cfg,
            ProviderChoice(
                _openai(cfg, key),
                requested,
                f"embedding.base_url = {cfg.base_url} (no API key needed)",
            ),
        )
    try:
        local = _local(cfg)
    except EmbeddingError as exc:
        return ProviderChoice(
            None, requested, f"no API key configured; local model unavailable: {exc.message}"
        )
    return ProviderChoice(local, requested, "no API key configured; bundled local model")


def _with_fallback(cfg: EmbeddingConfig, choice: ProviderChoice) -> ProviderChoice:
    """The openai choice with its query fallback, when one is configured and loads (a
    fallback that cannot load leaves the endpoint alone, and the reason says so)."""
    if cfg.fallback != "local":
        return choice
    from memoryd.embeddings.fallback import QueryFallback

    try:
        local = _local(cfg)
    except EmbeddingError as exc:
        return ProviderChoice(
            choice.provider,
            choice.requested,
            f"{choice.reason}; fallback local unavailable: {exc.message}",
        )
    return ProviderChoice(
        choice.provider,
        choice.requested,
        f"{choice.reason}; fallback local ({local.model})",
        QueryFallback(local),
    )


def _api_key(cfg: EmbeddingConfig, env: Mapping[str, str]) -> tuple[str, str]:
    """The key and where it came from (never the key itself in the second item)."""
    if cfg.api_key:
        return cfg.api_key, "embedding.api_key"
    if cfg.api_key_env and env.get(cfg.api_key_env):
        return env[cfg.api_key_env], f"${cfg.api_key_env}"
    return "", ""


def _openai(cfg: EmbeddingConfig, key: str) -> EmbeddingProvider:
    from memoryd.embeddings.openai_compat import OpenAIProvider

    return OpenAIProvider(
        model=cfg.model,
        base_url=cfg.base_url,
        api_key=key,
        dimensions=cfg.dimensions,
        batch_size=cfg.batch_size,
        timeout=cfg.timeout,
        max_retries=cfg.max_retries,
    )


def _local(cfg: EmbeddingConfig) -> EmbeddingProvider:
    from memoryd.embeddings.local import LocalProvider

    folder = Path(cfg.model_path).expanduser() if cfg.model_path else None
    return LocalProvider(
        threads=cfg.threads,
        batch_size=cfg.batch_size,
        max_tokens=cfg.max_tokens,
        folder=folder,
        pooling=cfg.pooling,
        normalize=cfg.normalize,
        query_prefix=cfg.query_prefix,
        passage_prefix=cfg.passage_prefix,
    )
