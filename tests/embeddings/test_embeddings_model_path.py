"""``[embedding] model_path``: a user's ONNX sentence-embedding model and tokenizer.json.
The tests build a tiny model of their own (onnx_util.py); nothing is downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine_util import IndexFactory, search
from memoryd.embeddings.base import embed_query
from memoryd.embeddings.factory import choose_provider
from memoryd.embeddings.local import LocalProvider
from memoryd.errors import ConfigError, EmbeddingError
from memoryd.index import schema
from memoryd.runtime.config import config_from_mapping
from onnx_util import DIMS, expected, write_model


def test_mean_and_cls_pooling_normalised(tmp_path: Path) -> None:
    emb = write_model(tmp_path / "m")
    mean = LocalProvider(folder=tmp_path / "m")
    cls = LocalProvider(folder=tmp_path / "m", pooling="cls")
    assert mean.dims == cls.dims == DIMS and mean.model == "m"
    np.testing.assert_allclose(
        mean.embed(["kayak trip"])[0], expected(emb, ["kayak", "trip"]), atol=1e-5
    )
    np.testing.assert_allclose(
        cls.embed(["kayak trip"])[0], expected(emb, ["kayak", "trip"], "cls"), atol=1e-5
    )
    assert mean.provider_key != cls.provider_key  # a pooling change re-embeds
    # batched with padding: the same vectors as one at a time
    texts = ["kayak", "tax return april sunday kayak trip", "数据库 备份"]
    np.testing.assert_allclose(
        mean.embed(texts), np.stack([mean.embed([t])[0] for t in texts]), atol=1e-5
    )


def test_query_and_passage_prefixes(tmp_path: Path) -> None:
    emb = write_model(tmp_path / "m")
    e5 = LocalProvider(folder=tmp_path / "m", query_prefix="query: ", passage_prefix="passage: ")
    np.testing.assert_allclose(
        e5.embed(["kayak"])[0], expected(emb, ["passage", ":", "kayak"]), atol=1e-5
    )
    np.testing.assert_allclose(
        embed_query(e5, "kayak"), expected(emb, ["query", ":", "kayak"]), atol=1e-5
    )


def test_max_tokens_truncates(tmp_path: Path) -> None:
    emb = write_model(tmp_path / "m")
    short = LocalProvider(folder=tmp_path / "m", max_tokens=4)  # [CLS] two words [SEP]
    np.testing.assert_allclose(
        short.embed(["kayak trip sunday tax"])[0], expected(emb, ["kayak", "trip"]), atol=1e-5
    )


def test_an_already_pooled_output_is_used_as_is(tmp_path: Path) -> None:
    write_model(tmp_path / "m", output="sentence_embedding", rank=2, inputs=("input_ids",))
    p = LocalProvider(folder=tmp_path / "m")
    v = p.embed(["kayak", "tax"])
    assert v.shape == (2, DIMS)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_normalize_false_refuses_a_model_whose_vectors_are_not_unit_length(tmp_path: Path) -> None:
    write_model(tmp_path / "m")
    with pytest.raises(EmbeddingError, match="normalize = true"):
        LocalProvider(folder=tmp_path / "m", normalize=False)


def test_a_folder_that_cannot_be_used_is_a_start_up_error_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(EmbeddingError, match=str(missing)):
        LocalProvider(folder=missing)
    write_model(tmp_path / "no-model")
    (tmp_path / "no-model" / "model.onnx").unlink()
    with pytest.raises(EmbeddingError, match=r"no-model has no ONNX model"):
        LocalProvider(folder=tmp_path / "no-model")
    write_model(tmp_path / "no-tok")
    (tmp_path / "no-tok" / "tokenizer.json").unlink()
    with pytest.raises(EmbeddingError, match=r"no-tok has no tokenizer.json"):
        LocalProvider(folder=tmp_path / "no-tok")
    write_model(tmp_path / "bad-tok")
    (tmp_path / "bad-tok" / "tokenizer.json").write_text(json.dumps({"model": "?"}))
    with pytest.raises(EmbeddingError, match=r"cannot load the tokenizer .*bad-tok"):
        LocalProvider(folder=tmp_path / "bad-tok")
    write_model(tmp_path / "bad-onnx")
    (tmp_path / "bad-onnx" / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(EmbeddingError, match=r"cannot load .*bad-onnx"):
        LocalProvider(folder=tmp_path / "bad-onnx")


def test_an_output_of_the_wrong_shape_is_a_start_up_error(tmp_path: Path) -> None:
    # a (batch, dims) output under a token-output name: pooling it would be nonsense
    write_model(tmp_path / "m", output="last_hidden_state", rank=2)
    shape = r"model.onnx.*shape \(1, 8\).*\(batch, tokens, dims\)"
    with pytest.raises(EmbeddingError, match=shape):
        LocalProvider(folder=tmp_path / "m")
    write_model(tmp_path / "ids", inputs=("input_ids", "pixel_values"))
    with pytest.raises(EmbeddingError, match=r"ids/model.onnx takes inputs"):
        LocalProvider(folder=tmp_path / "ids")


def test_config_passes_the_settings_and_refuses_model_path_for_openai(tmp_path: Path) -> None:
    emb = write_model(tmp_path / "m")
    cfg = config_from_mapping(
        {
            "embedding": {
                "provider": "local",
                "model_path": str(tmp_path / "m"),
                "pooling": "cls",
                "query_prefix": "query: ",
            }
        }
    )
    choice = choose_provider(cfg.embedding, env={})
    assert choice.provider is not None and choice.provider.model == "m"
    np.testing.assert_allclose(
        embed_query(choice.provider, "kayak"),
        expected(emb, ["query", ":", "kayak"], "cls"),
        atol=1e-5,
    )
    with pytest.raises(ConfigError, match="model_path"):
        config_from_mapping({"embedding": {"provider": "openai", "model_path": "/x"}})
    with pytest.raises(ConfigError, match="pooling"):
        config_from_mapping({"embedding": {"pooling": "max"}})


def test_changing_the_model_re_embeds_every_chunk(make_index: IndexFactory) -> None:
    make_index.write("memory/a.md", "# Trip\n\nkayak trip sunday\n")
    make_index.write("memory/b.md", "# Taxes\n\ntax return april\n")
    write_model(make_index.tmp / "m1", seed=1)
    first = LocalProvider(folder=make_index.tmp / "m1")
    ix = make_index({"embedding": {"provider": "local"}}, provider=first)
    ix.sync()
    assert ix.wait_embedded(30)
    ix.close()
    conn = schema.connect(make_index.db)
    before = schema.get_meta(conn)["embedding"]
    old = dict(conn.execute("SELECT id, embedding FROM window_vectors"))
    conn.close()

    write_model(make_index.tmp / "m1", seed=2)  # the same folder, new weights
    second = LocalProvider(folder=make_index.tmp / "m1")
    assert second.provider_key != first.provider_key
    again = make_index({"embedding": {"provider": "local"}}, provider=second)
    again.sync()
    assert again.wait_embedded(30)
    conn = schema.connect(make_index.db)
    assert schema.get_meta(conn)["embedding"] != before
    new = dict(conn.execute("SELECT id, embedding FROM window_vectors"))
    assert new.keys() == old.keys() and all(new[i] != old[i] for i in new)
    assert search(again, "kayak", mode="vector").mode_used == "vector"
