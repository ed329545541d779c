"""``[embedding] provider`` resolution: which provider, and a reason that says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings import local
from memoryd.embeddings.factory import choose_provider
from memoryd.embeddings.local import LocalProvider
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.errors import EmbeddingError
from memoryd.runtime.config import EmbeddingConfig


def test_none_means_keyword_only() -> None:
    choice = choose_provider(EmbeddingConfig(provider="none"), env={"OPENAI_API_KEY": "sk-x"})
    assert choice.provider is None
    assert choice.requested == "none"
    assert choice.reason == "embedding.provider = none"


def test_auto_picks_openai_when_the_key_is_in_the_environment() -> None:
    choice = choose_provider(EmbeddingConfig(), env={"OPENAI_API_KEY": "sk-from-env"})
    assert isinstance(choice.provider, OpenAIProvider)
    assert choice.requested == "auto"
    assert "$OPENAI_API_KEY" in choice.reason
    assert "sk-from-env" not in choice.reason


def test_auto_names_a_custom_key_variable_or_the_config_key() -> None:
    cfg = EmbeddingConfig(api_key_env="MY_EMBED_KEY")
    assert "$MY_EMBED_KEY" in choose_provider(cfg, env={"MY_EMBED_KEY": "k"}).reason
    cfg = EmbeddingConfig(api_key="sk-inline")
    assert "embedding.api_key" in choose_provider(cfg, env={}).reason


@pytest.mark.model
def test_auto_without_a_key_uses_the_bundled_local_model() -> None:
    choice = choose_provider(EmbeddingConfig(threads=1), env={})
    assert isinstance(choice.provider, LocalProvider)
    assert choice.reason == "no API key configured; bundled local model"
    choice.provider.close()


def test_auto_falls_back_to_keyword_only_when_the_local_model_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"broken")
    monkeypatch.setattr(local, "bundled_model_path", lambda: broken)
    choice = choose_provider(EmbeddingConfig(), env={})
    assert choice.provider is None
    assert choice.reason.startswith("no API key configured; local model unavailable:")
    assert "sha256" in choice.reason


def test_explicit_local_that_cannot_load_raises(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(local, "bundled_model_path", lambda: tmp_path / "missing.onnx")
    with pytest.raises(EmbeddingError, match="cannot read"):
        choose_provider(EmbeddingConfig(provider="local"), env={"OPENAI_API_KEY": "sk-x"})


def test_explicit_openai_without_key_or_base_url_raises() -> None:
    with pytest.raises(EmbeddingError, match=r"\$OPENAI_API_KEY"):
        choose_provider(EmbeddingConfig(provider="openai"), env={})


def test_openai_passes_the_config_through(openai_server: FakeOpenAIServer) -> None:
    cfg = EmbeddingConfig(
        provider="openai",
        base_url=openai_server.base_url,
        model="m-1",
        dimensions=8,
        batch_size=2,
        max_retries=0,
        timeout=5.0,
    )
    choice = choose_provider(cfg, env={"OPENAI_API_KEY": "sk-cfg"})
    assert choice.provider is not None
    assert choice.provider.embed(["a", "b", "c"]).shape == (3, 8)
    bodies = [r.body for r in openai_server.requests]
    assert [b["input"] for b in bodies] == [["a", "b"], ["c"]]
    assert {b["model"] for b in bodies} == {"m-1"}
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-cfg"


def test_a_local_endpoint_needs_no_key(openai_server: FakeOpenAIServer) -> None:
    # Ollama-style: base_url set, no key anywhere. Explicit openai and auto both use it.
    for provider in ("openai", "auto"):
        cfg = EmbeddingConfig(provider=provider, base_url=openai_server.base_url)
        choice = choose_provider(cfg, env={})
        assert isinstance(choice.provider, OpenAIProvider)
        assert choice.provider.embed(["hi"]).shape == (1, 64)
    assert "embedding.base_url" in choice.reason
