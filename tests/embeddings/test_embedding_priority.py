"""Embedding runs at a lowered priority (Linux: per thread), searches at the normal one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from engine_util import IndexFactory
from fakes.openai_server import FakeOpenAIServer
from memoryd.embeddings.openai_compat import OpenAIProvider
from memoryd.runtime.priority import BACKGROUND_NICE

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's"
)


def nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def lowered(base: int) -> int:
    return min(19, base + BACKGROUND_NICE)


def test_the_embedding_thread_runs_lowered_and_the_caller_does_not(
    make_index: IndexFactory, openai_server: FakeOpenAIServer
) -> None:
    base = nice_of(threading.get_native_id())
    make_index.write("memory/2024-05-01.md", "- Bought a blue bicycle.\n")
    p = OpenAIProvider(base_url=openai_server.base_url, api_key="sk-test", max_retries=0)
    ix = make_index(None, p)
    ix.sync()
    assert ix.wait_embedded(timeout=30)
    seen: list[int] = []
    done = threading.Event()
    assert ix.queries.embedder is not None
    ix.queries.embedder.run_later(
        lambda: (seen.append(nice_of(threading.get_native_id())), done.set())
    )
    assert done.wait(10)
    assert seen == [lowered(base)]
    assert nice_of(threading.get_native_id()) == base


# Run in a process of its own: under pytest -n a thread another test left behind (a daemon's
# background work) could start between the two listings and be taken for onnxruntime's.
_WORKERS_PROBE = """
import json, os, threading
from memoryd.embeddings.local import LocalProvider
from memoryd.embeddings.tokenizer import load_tokenizer

def nice(t): return os.getpriority(os.PRIO_PROCESS, t)
me = threading.get_native_id()
base = nice(me)
# tokenizers starts its process-wide pool at its first batch, on whichever thread asks:
# start it now, so that only onnxruntime's workers are new below.
load_tokenizer().encode_batch(["start the tokenizer's pool"] * 8)
before = set(os.listdir("/proc/self/task"))
provider = LocalProvider(threads=2)
try:
    provider.embed(["the workers run now"])
    new = [int(t) for t in set(os.listdir("/proc/self/task")) - before]
    alive = [nice(t) for t in new if os.path.exists(f"/proc/self/task/{t}")]
    print(json.dumps({"base": base, "new": len(new), "nices": alive, "caller": nice(me)}))
finally:
    provider.close()
"""


@pytest.mark.model
def test_the_local_models_worker_threads_start_lowered() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WORKERS_PROBE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["new"], "onnxruntime started no intra-op worker with threads=2"
    assert set(seen["nices"]) == {lowered(seen["base"])}
    assert seen["caller"] == seen["base"]  # the caller (a search's thread) keeps its priority
