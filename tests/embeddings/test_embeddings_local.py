"""The bundled ONNX provider: real model, real vectors (marked ``model``: a few seconds)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memoryd.embeddings.base import EmbeddingProvider
from memoryd.embeddings.local import (
    DIMS,
    MODEL_SHA256,
    LocalProvider,
    bundled_model_path,
    plan_batches,
)
from memoryd.errors import EmbeddingError


@pytest.fixture(scope="module")
def local() -> Iterator[LocalProvider]:
    provider = LocalProvider(threads=2, batch_size=4)
    yield provider
    provider.close()


def cos(provider: EmbeddingProvider, a: str, b: str) -> float:
    va, vb = provider.embed([a, b])
    return float(va @ vb)


@pytest.mark.model
@pytest.mark.parametrize(
    ("query", "near", "far"),
    [
        (
            "How do I bake bread?",
            "Knead the dough, let it rise overnight, then bake the loaf at 230 degrees.",
            "Capital gains are taxed differently from ordinary income under the tax code.",
        ),
        (
            "my cat keeps scratching the sofa",
            "Give kittens a scratching post so they leave the furniture alone.",
            "The database migration failed because of a missing index on the users table.",
        ),
        (
            "fix the failing deploy pipeline",
            "The CI job broke after the release branch changed the Docker image tag.",
            "We hiked up the mountain and watched the sunset over the lake.",
        ),
    ],
)
def test_semantic_neighbours_rank_above_unrelated_text(
    local: LocalProvider, query: str, near: str, far: str
) -> None:
    assert cos(local, query, near) > cos(local, query, far) + 0.1


@pytest.mark.model
def test_vectors_are_unit_length_float32_384_dims(local: LocalProvider) -> None:
    vectors = local.embed(["alpha", "a somewhat longer sentence about memory", ""])
    assert vectors.shape == (3, DIMS)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.dims == DIMS
    assert MODEL_SHA256[:16] in local.provider_key
    assert "max_tokens=256" in local.provider_key


@pytest.mark.model
def test_batched_results_keep_order_and_equal_single_calls(local: LocalProvider) -> None:
    # Lengths vary so the length sort reorders them across batches (batch_size 4).
    texts = [("word " * n).strip() + f" item {n}" for n in (40, 1, 17, 3, 60, 0, 8, 25, 2)]
    batched = local.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batched[i], local.embed([text])[0], atol=1e-5)


@pytest.mark.model
def test_empty_input_and_empty_strings(local: LocalProvider) -> None:
    assert local.embed([]).shape == (0, DIMS)
    vectors = local.embed(["", "", "not empty"])
    np.testing.assert_allclose(vectors[0], vectors[1])
    assert np.isfinite(vectors).all()


@pytest.mark.model
def test_long_text_is_truncated_to_max_tokens(local: LocalProvider) -> None:
    head = "The committee approved the budget for the new library. " * 40  # > 256 tokens
    long_a = local.embed([head + "Completely different tail about rockets. " * 50])
    long_b = local.embed([head + "Another tail about gardening and tomatoes. " * 50])
    # Both tails lie beyond the 256 token window: the vectors are the same.
    np.testing.assert_allclose(long_a, long_b, atol=1e-6)


def test_corrupted_model_copy_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(bundled_model_path(), copy)
    with copy.open("r+b") as f:
        f.seek(1_000_000)
        byte = f.read(1)
        f.seek(1_000_000)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingError, match="sha256"):
        LocalProvider(model_path=copy)


def test_truncated_or_missing_model_is_refused(tmp_path: Path) -> None:
    short = tmp_path / "short.onnx"
    short.write_bytes(b"not a model")
    with pytest.raises(EmbeddingError, match="sha256"):
        LocalProvider(model_path=short)
    with pytest.raises(EmbeddingError, match="cannot read"):
        LocalProvider(model_path=tmp_path / "missing.onnx")


@pytest.mark.model
def test_closed_provider_raises() -> None:
    provider = LocalProvider(threads=1)
    provider.close()
    with pytest.raises(EmbeddingError, match="closed"):
        provider.embed(["after close"])


@pytest.mark.model
def test_max_tokens_is_capped_at_the_models_512_positions() -> None:
    provider = LocalProvider(threads=1, max_tokens=8192)
    assert provider.embed(["many words " * 2000]).shape == (1, DIMS)
    assert "max_tokens=512" in provider.provider_key


@pytest.mark.model
def test_concurrent_calls_give_the_same_vectors_as_serial_ones(local: LocalProvider) -> None:
    texts = [f"thread {i} writes about topic {i % 3} " * (i + 1) for i in range(8)]
    serial = local.embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: local.embed(texts[i : i + 2]), range(0, 8, 2)))
    np.testing.assert_allclose(np.concatenate(results), serial, atol=1e-5)


def test_batches_group_similar_lengths_within_count_and_token_budgets() -> None:
    lengths = [300, 5, 7, 300, 6, 100, 5, 200]
    batches = plan_batches(lengths, batch_size=3, max_batch_tokens=512)
    # Shortest first; 3 texts at most; 2 x 300 padded tokens would exceed 512.
    assert batches == [[1, 6, 4], [2, 5], [7], [0], [3]]
    assert plan_batches([10] * 5, batch_size=16, max_batch_tokens=1) == [[0], [1], [2], [3], [4]]
    assert plan_batches([], batch_size=16, max_batch_tokens=512) == []


def test_lone_surrogates_are_embedded_as_replacement_characters(local: LocalProvider) -> None:
    # Python str can hold half a surrogate pair (json.loads of "\ud800" gives one); the
    # tokenizer refuses such strings outright.
    lone, replaced = local.embed(["\ud800 tea", "\ufffd tea"])
    assert np.allclose(lone, replaced)
    assert np.allclose(local.embed(["\U0001f600 tea"]), local.embed(["\ud83d\ude00 tea"]))


@pytest.mark.model
@pytest.mark.parametrize("max_tokens", [2, 8, 256])
def test_the_bundled_model_reads_the_tokens_a_truncating_tokenizer_gives(max_tokens: int) -> None:
    from tokenizers import Tokenizer

    from memoryd.embeddings.tokenizer import TOKENIZER_FILE

    truncating = Tokenizer.from_file(str(TOKENIZER_FILE))
    truncating.no_padding()
    truncating.enable_truncation(max_length=max_tokens)
    words = "the kayak trip on Sunday, then taxes (April) and unbelievably long words; "
    texts = ["", "x", "hello world", words * 3, words * 40, "数据库 备份 " * 100]
    provider = LocalProvider(threads=1, max_tokens=max_tokens)
    try:
        got = provider._token_ids(texts)
    finally:
        provider.close()
    assert got == [e.ids for e in truncating.encode_batch(texts)]
    assert any(len(ids) == max_tokens for ids in got)


@pytest.mark.model
def test_the_int8_word_table_gives_the_shipped_models_vectors_bit_for_bit() -> None:
    from memoryd.embeddings.local import _load_session

    texts = [
        "Caroline went to the LGBTQ support group on 7 May 2023.",
        "the kayak trip on Sunday, then taxes (April) " * 30,
        "数据库 备份",
        "",
    ]
    rewritten = LocalProvider(threads=1)
    shipped = LocalProvider(threads=1)
    shipped._session = _load_session(bundled_model_path(), 1)
    try:
        assert np.array_equal(rewritten.embed(texts), shipped.embed(texts))
        assert np.array_equal(rewritten.embed_query("kayak"), shipped.embed_query("kayak"))
    finally:
        rewritten.close()
        shipped.close()


@pytest.mark.model
def test_the_rewritten_model_is_kept_once_and_made_again_when_damaged(tmp_path: Path) -> None:
    import onnx

    from memoryd.embeddings import int8_rows

    path = bundled_model_path()
    int8_rows.keep_in(tmp_path)
    try:
        with int8_rows.rows_model(path, MODEL_SHA256) as first:
            assert first.parent == tmp_path
            ops = {n.name: n.op_type for n in onnx.load(str(first)).graph.node}
            assert ops[f"{int8_rows._TABLE}.rows_q"] == "Gather"  # the int8 table's rows
            assert f"{int8_rows._TABLE}.weight_mul" not in ops
        with int8_rows.rows_model(path, MODEL_SHA256) as again:
            assert again == first
        first.write_bytes(first.read_bytes()[:1000])  # a partial copy
        with int8_rows.rows_model(path, MODEL_SHA256) as made:
            assert made.stat().st_size > 1000 and [*tmp_path.glob("*.onnx")] == [made]
    finally:
        int8_rows._kept_in.clear()
