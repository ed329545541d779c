"""memoryd: a per-user memory daemon for AI agents."""

import os

__version__ = "0.1.0"

# One BLAS thread (read when numpy loads, so before any of our imports do): searches already
# run in parallel on reader threads, and a multi-threaded matrix-vector product for the KNN
# waits on helper threads whenever the cores are busy (10k vectors: 2.8 ms wall, 0.3 ms with
# one thread, on 2 loaded cores). onnxruntime has its own pool (embedding.threads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# onnxruntime's telemetry (on by default in its Linux and macOS wheels; 1.32 here) writes a
# device id and an event cache under ~/.cache/Microsoft/DeveloperTools/.onnxruntime when the
# model loads, and queues events for upload: a daemon that promises no network and keeps
# everything under MEMORYD_HOME must not. Read once when onnxruntime initialises; a user
# who wants it sets ORT_DISABLE_TELEMETRY=0.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
