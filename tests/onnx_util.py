"""A tiny ONNX sentence-embedding model and its tokenizer, built with onnx's helper API so
tests exercise embedding.model_path (and a server running "the same model") offline; the
vectors it makes can be computed by hand (``expected``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "query",
    "passage",
    ":",
    "kayak",
    "trip",
    "sunday",
    "tax",
    "return",
    "april",
    "数据库",
    "备份",
]
DIMS = 8


def table(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(len(VOCAB), DIMS)).astype(np.float32)


def write_model(
    folder: Path,
    seed: int = 1,
    output: str = "last_hidden_state",
    rank: int = 3,
    inputs: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids"),
) -> np.ndarray:
    """A folder with model.onnx (token vectors: a lookup in a seeded table, plus the text's
    mean so the first token depends on the text) and a word-level tokenizer.json."""
    folder.mkdir(parents=True, exist_ok=True)
    emb = table(seed)
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["tokens"])]
    if "attention_mask" in inputs:  # the mean of the real tokens only, as a model attends
        nodes += [
            helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["maskf", "last"], ["mask3"]),
            helper.make_node("Mul", ["tokens", "mask3"], ["masked"]),
            helper.make_node("ReduceSum", ["masked", "axes"], ["total"], keepdims=1),
            helper.make_node("ReduceSum", ["mask3", "axes"], ["count"], keepdims=1),
            helper.make_node("Div", ["total", "count"], ["mean"]),
        ]
    else:
        nodes.append(helper.make_node("ReduceMean", ["tokens", "axes"], ["mean"], keepdims=1))
    nodes.append(helper.make_node("Add", ["tokens", "mean"], ["hidden"]))
    if rank == 3:
        nodes.append(helper.make_node("Identity", ["hidden"], [output]))
        shape: list[str | int] = ["batch", "tokens", DIMS]
    else:
        nodes.append(helper.make_node("ReduceMean", ["hidden", "axes"], [output], keepdims=0))
        shape = ["batch", DIMS]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)],
        [
            numpy_helper.from_array(emb, "table"),
            numpy_helper.from_array(np.array([1], np.int64), "axes"),
            numpy_helper.from_array(np.array([-1], np.int64), "last"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation()]
    )
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tok.save(str(folder / "tokenizer.json"))
    return emb


def expected(emb: np.ndarray, words: list[str], pooling: str = "mean") -> np.ndarray:
    ids = [2, *(VOCAB.index(w) if w in VOCAB else 1 for w in words), 3]
    hidden = emb[ids] + emb[ids].mean(axis=0)
    vec = hidden[0] if pooling == "cls" else hidden.mean(axis=0)
    return vec / np.linalg.norm(vec)
