"""The bundled model with its word-embedding table left int8: ~35 MB less for good.

The model stores each weight int8, with a Cast and a per-row Mul (its scale) in front;
onnxruntime's constant folding turns every one into float32 when the session loads, the
30,522 x 384 word-embedding table among them (47 MB), of which a text reads a few hundred
rows. Here the table's rows are gathered first, then cast and scaled: the rows a text reads
get the same float32 values (the same products), and the table stays int8 (11 MB). The
vectors are the same bit for bit (tests/embeddings/test_embeddings_local.py compares the
two sessions).

The rewrite needs the onnx package, so it runs in a child process (onnx and its protobuf
classes would stay in the daemon otherwise), once per model file: the result is kept in
the folder ``keep_in`` names (the daemon's state folder), named by both files' sha256 and
checked on load. Without a folder (tests, benches) it goes to a temporary file per load.
When the rewrite cannot be made, the model loads as shipped (the same vectors, more memory).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from memoryd.runtime.logs import get_logger

__all__ = ["keep_in", "rows_model"]

log = get_logger("memoryd.embeddings")

REWRITE_VERSION: Final = 1
_TABLE: Final = "inner.embeddings.word_embeddings"

# Run in a child: python -c _REWRITE SRC DST; exit 3 when the graph is not the one expected.
_REWRITE: Final = f"""\
import sys
import onnx
from onnx import TensorProto, helper
src, dst, w = sys.argv[1], sys.argv[2], {_TABLE!r}
model = onnx.load(src)
nodes = list(model.graph.node)
by_name = {{n.name: n for n in nodes}}
cast, mul = by_name.get(w + ".weight_cast"), by_name.get(w + ".weight_mul")
gathers = [n for n in nodes if mul and n.op_type == "Gather" and n.input[0] == mul.output[0]]
if not (cast and mul and len(gathers) == 1) or list(cast.input) != [w + ".weight_q"]:
    sys.exit(3)
if list(mul.input) != [cast.output[0], w + ".weight_scale"]:
    sys.exit(3)
if any(n.input[0] == mul.output[0] for n in nodes if n is not gathers[0]):
    sys.exit(3)
ids, out = gathers[0].input[1], gathers[0].output[0]
rows = [
    helper.make_node("Gather", [w + ".weight_q", ids], [w + ".rows_q"], w + ".rows_q", axis=0),
    helper.make_node("Gather", [w + ".weight_scale", ids], [w + ".rows_s"], w + ".rows_s", axis=0),
    helper.make_node("Cast", [w + ".rows_q"], [w + ".rows_f"], w + ".rows_f", to=TensorProto.FLOAT),
    helper.make_node("Mul", [w + ".rows_f", w + ".rows_s"], [out], w + ".rows"),
]
del model.graph.node[:]
for n in nodes:
    if n is gathers[0]:
        model.graph.node.extend(rows)
    elif n is not cast and n is not mul:
        model.graph.node.append(n)
onnx.checker.check_model(model)
onnx.save(model, dst)
"""

_kept_in: list[Path] = []


def keep_in(folder: Path) -> None:
    """Keep rewritten models in ``folder`` (made when first needed)."""
    _kept_in[:] = [folder]


@contextlib.contextmanager
def rows_model(path: Path, digest: str) -> Iterator[Path]:
    """The model file to load for the bundled model at ``path`` (sha256 ``digest``): the
    rewritten one, or ``path`` itself when it cannot be made. Valid inside the block."""
    if _kept_in:
        yield _kept(path, digest, _kept_in[0])
        return
    import tempfile  # here only: a daemon's start sets keep_in (tempfile is ~13 M instructions)

    with tempfile.TemporaryDirectory(prefix="memoryd-model-") as tmp:
        out = Path(tmp) / "model.onnx"
        yield out if _rewrite(path, out) else path


def _kept(path: Path, digest: str, folder: Path) -> Path:
    prefix = f"{digest[:16]}-int8-rows-v{REWRITE_VERSION}-"
    with contextlib.suppress(OSError):
        for found in sorted(folder.glob(prefix + "*.onnx")):
            if _sha256(found)[:16] == found.stem.removeprefix(prefix):
                return found
            found.unlink()  # damaged (a partial copy): made again below
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{prefix}{os.getpid()}.tmp"
        if not _rewrite(path, tmp):
            tmp.unlink(missing_ok=True)
            return path
        final = folder / f"{prefix}{_sha256(tmp)[:16]}.onnx"
        tmp.replace(final)
        return final
    except OSError as exc:
        log.warning("model_rewrite_not_kept", folder=str(folder), error=str(exc))
        return path


def _rewrite(src: Path, dst: Path) -> bool:
    try:
        out = subprocess.run(
            [sys.executable, "-P", "-c", _REWRITE, str(src), str(dst)],
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = str(exc)
    else:
        if out.returncode == 0:
            return True
        last = (out.stderr.strip().splitlines() or [""])[-1]
        reason = "not the graph expected" if out.returncode == 3 else last
    log.warning("model_rewrite_failed", reason=reason, effect="the model loads as shipped")
    return False


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
