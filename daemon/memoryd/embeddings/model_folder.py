"""A sentence-embedding model the user names: ``[embedding] model_path``, a folder with an
ONNX model and its Hugging Face ``tokenizer.json`` (what ``optimum-cli export onnx`` writes;
multilingual-e5, bge-m3, paraphrase-multilingual-MiniLM ...).

Everything that can be wrong with the folder is found here, at start-up, as an
EmbeddingError naming the path: a missing file, a tokenizer that does not load, a graph
without ``input_ids``, an output that is not (batch, tokens, dims) or (batch, dims). A probe
sentence is run once, which also tells the vector size.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import EmbeddingError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Where exporters put the graph: optimum writes model.onnx, some repositories onnx/model.onnx.
MODEL_FILES = ("model.onnx", "onnx/model.onnx")
TOKENIZER_FILE = "tokenizer.json"
KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Outputs to pool, by preference; "sentence_embedding" is already pooled.
TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
POOLED_OUTPUTS = ("sentence_embedding", "pooler_output")
PAD_TOKENS = ("[PAD]", "<pad>", "<|endoftext|>")


@dataclass(frozen=True)
class ModelFiles:
    onnx: Path
    tokenizer: Path
    name: str  # the folder's name: what status and the index fingerprint show
    digest: str  # of the graph and the tokenizer: a changed file re-embeds


def find_files(folder: Path) -> ModelFiles:
    if not folder.is_dir():
        raise EmbeddingError(
            f"embedding.model_path {folder} is not a folder (it should hold model.onnx and "
            f"{TOKENIZER_FILE})"
        )
    onnx = next((folder / f for f in MODEL_FILES if (folder / f).is_file()), None)
    if onnx is None:
        raise EmbeddingError(
            f"embedding.model_path {folder} has no ONNX model (looked for {', '.join(MODEL_FILES)})"
        )
    tokenizer = folder / TOKENIZER_FILE
    if not tokenizer.is_file():
        raise EmbeddingError(
            f"embedding.model_path {folder} has no {TOKENIZER_FILE} (the model's Hugging "
            "Face tokenizer; a tokenizer.model or vocab.txt alone cannot be read)"
        )
    digest = hashlib.sha256()
    for path in (onnx, tokenizer):
        try:
            with path.open("rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
        except OSError as exc:
            raise EmbeddingError(f"cannot read {path}: {exc}") from None
    return ModelFiles(onnx, tokenizer, folder.resolve().name, digest.hexdigest())


def load_tokenizer_file(path: Path, max_tokens: int) -> tuple[Tokenizer, int]:
    """The tokenizer, truncating at ``max_tokens``, and its padding id."""
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
        raise EmbeddingError(f"cannot load the tokenizer {path}: {exc}") from None
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    pad = next((i for t in PAD_TOKENS if (i := tok.token_to_id(t)) is not None), 0)
    return tok, pad


@dataclass(frozen=True)
class GraphPlan:
    inputs: tuple[str, ...]  # the known inputs the graph takes, fed in this order
    output: str
    pooled: bool  # the output is already one vector per text


def plan_graph(session: Any, path: Path) -> GraphPlan:
    """Which inputs to feed and which output to read; refuses graphs we cannot drive."""
    names = [i.name for i in session.get_inputs()]
    unknown = [n for n in names if n not in KNOWN_INPUTS]
    if "input_ids" not in names or unknown:
        raise EmbeddingError(
            f"the ONNX model {path} takes inputs {names}; a sentence-embedding model takes "
            f"input_ids (and attention_mask, token_type_ids)"
        )
    outputs = [o.name for o in session.get_outputs()]
    for name in TOKEN_OUTPUTS:
        if name in outputs:
            return GraphPlan(tuple(names), name, False)
    for name in POOLED_OUTPUTS:
        if name in outputs:
            return GraphPlan(tuple(names), name, True)
    # An unnamed export: its first output, shaped as the probe will tell.
    rank = len(session.get_outputs()[0].shape or ())
    if rank not in (2, 3):
        raise EmbeddingError(
            f"the ONNX model {path} outputs {outputs[0]} of rank {rank}; expected "
            "(batch, tokens, dims) or (batch, dims)"
        )
    return GraphPlan(tuple(names), outputs[0], rank == 2)
