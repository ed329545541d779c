"""A real HTTP server on 127.0.0.1 that speaks enough of the OpenAI API for memoryd's tests.

``POST /v1/embeddings`` answers deterministic vectors: a hashed bag of lower-cased words, so
texts sharing words are close. ``POST /v1/chat/completions`` answers scripted messages (an
echo of the last user message by default). Each endpoint has a queue of one-shot behaviours
(an HTTP status, garbage, a delay) consumed by the next requests; ``stop()`` makes the port
refuse connections until ``start()``.

    with FakeOpenAIServer() as server:
        server.respond_status(429)
        provider = OpenAIProvider(base_url=server.base_url, api_key="sk-test", max_retries=1)
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

import numpy as np

Endpoint = Literal["embeddings", "chat"]
GarbageKind = Literal[
    "not_json",  # a 200 whose body is not JSON
    "empty_data",  # {"data": []} (or no choices for chat)
    "no_data",  # a JSON object without "data"
    "wrong_count",  # one vector fewer than inputs
    "nan",  # NaN in a vector
    "string",  # a string in a vector
    "empty_vector",  # "embedding": []
    "zero_vector",  # all zeros: cannot be normalised
    "ragged",  # vectors of different lengths
    "bad_index",  # every item claims index 0
]
GARBAGE_KINDS: tuple[GarbageKind, ...] = (
    "not_json",
    "empty_data",
    "no_data",
    "wrong_count",
    "nan",
    "string",
    "empty_vector",
    "zero_vector",
    "ragged",
    "bad_index",
)
_PATHS: dict[str, Endpoint] = {"/v1/embeddings": "embeddings", "/v1/chat/completions": "chat"}
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: Any  # parsed JSON, or None when the body was not JSON
    headers: dict[str, str]  # lower-cased names


@dataclass
class _Behaviour:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    garbage: GarbageKind | None = None
    delay: float = 0.0
    content: str | None = None  # chat: scripted message
    finish_reason: str = "stop"


def fake_embedding(text: str, dims: int) -> list[float]:
    """Word counts hashed into ``dims`` buckets, scaled (the client must normalise)."""
    vec = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec[bucket % dims] += 3.0
    if not any(vec):
        vec[0] = 1.0  # no words: still a valid (non-zero) vector
    return vec


class FakeOpenAIServer:
    def __init__(self, dims: int = 64, model: str = "fake-embedding") -> None:
        self.dims = dims
        self.model = model
        self.requests: list[RecordedRequest] = []
        self._queues: dict[Endpoint, deque[_Behaviour]] = {"embeddings": deque(), "chat": deque()}
        self._lock = threading.Lock()
        self._port = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._chat_fn: Callable[[dict[str, Any]], str] | None = None
        self._embed_fn: Callable[[str], list[float]] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Listen (again, on the same port after ``stop()``)."""
        if self._httpd is not None:
            return self
        httpd = ThreadingHTTPServer(("127.0.0.1", self._port), _handler_for(self))
        httpd.daemon_threads = True
        self._port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the listening socket: new connections are refused (a total outage)."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if not self._port:
            raise RuntimeError("the fake server was never started")
        return f"http://127.0.0.1:{self._port}/v1"

    # -- scripting -------------------------------------------------------------------------

    def respond_status(
        self,
        code: int,
        body: Any = None,
        *,
        endpoint: Endpoint = "embeddings",
        retry_after: float | None = 0.0,
        times: int = 1,
    ) -> None:
        """The next ``times`` requests get HTTP ``code`` with an OpenAI-style error body.

        ``retry_after`` (seconds) is sent as Retry-After and retry-after-ms; the openai client
        only honours a positive value, so 0 becomes 1 ms, which keeps retrying tests fast.
        """
        if body is None:
            body = {"error": {"message": f"fake error {code}", "type": "fake", "code": code}}
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["Retry-After"] = str(math.ceil(retry_after))
            headers["retry-after-ms"] = str(max(1, round(retry_after * 1000)))
        for _ in range(times):
            self._push(endpoint, _Behaviour(status=code, body=body, headers=headers))

    def respond_garbage(self, kind: GarbageKind, *, endpoint: Endpoint = "embeddings") -> None:
        if kind not in GARBAGE_KINDS:
            raise ValueError(f"unknown garbage kind {kind!r}")
        self._push(endpoint, _Behaviour(garbage=kind))

    def delay(self, seconds: float, *, endpoint: Endpoint = "embeddings") -> None:
        """The next request is answered normally, after ``seconds``."""
        self._push(endpoint, _Behaviour(delay=seconds))

    def respond_chat(
        self, content: str, finish_reason: str = "stop", *, delay: float = 0.0
    ) -> None:
        """The next chat request gets ``content`` (after ``delay`` seconds, if given)."""
        self._push("chat", _Behaviour(content=content, finish_reason=finish_reason, delay=delay))

    def answer_chat_with(self, fn: Callable[[dict[str, Any]], str] | None) -> None:
        """Chat requests not scripted otherwise get ``fn(request body)`` instead of an echo."""
        self._chat_fn = fn

    def answer_embeddings_with(self, fn: Callable[[str], list[float]] | None) -> None:
        """Embeddings come from ``fn(text)`` instead of the hashed bag of words: a server
        running a real model (the tests give it the one a local provider runs)."""
        self._embed_fn = fn

    def requests_to(self, endpoint: Endpoint) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if _PATHS.get(r.path) == endpoint]

    def _push(self, endpoint: Endpoint, behaviour: _Behaviour) -> None:
        with self._lock:
            self._queues[endpoint].append(behaviour)

    # -- answering (called from handler threads) -------------------------------------------

    def _answer(
        self, path: str, raw: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        endpoint = _PATHS.get(path)
        with self._lock:
            self.requests.append(RecordedRequest(path, body, headers))
            queue = self._queues[endpoint] if endpoint else None
            behaviour = queue.popleft() if queue else _Behaviour()
        if endpoint is None:
            return _json(404, {"error": {"message": f"no route {path}", "type": "fake"}})
        if behaviour.delay:
            time.sleep(behaviour.delay)
        if behaviour.status != 200:
            status, out_headers, out = _json(behaviour.status, behaviour.body)
            return status, {**out_headers, **behaviour.headers}, out
        if behaviour.garbage == "not_json":
            return 200, {"Content-Type": "application/json"}, b"<html>upstream hiccup</html>"
        if not isinstance(body, dict):
            return _json(400, {"error": {"message": "body must be a JSON object"}})
        if endpoint == "embeddings":
            return _json(200, self._embeddings(body, behaviour.garbage))
        return _json(200, self._chat(body, behaviour))

    def _embeddings(self, body: dict[str, Any], garbage: GarbageKind | None) -> dict[str, Any]:
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        dims = int(body.get("dimensions") or self.dims)
        embed = self._embed_fn or (lambda t: fake_embedding(t, dims))
        vectors: list[Any] = [embed(str(t)) for t in texts]
        if garbage == "wrong_count":
            vectors = vectors[:-1]
        elif garbage == "empty_data":
            vectors = []
        elif vectors and garbage in ("nan", "string", "empty_vector", "zero_vector", "ragged"):
            last = vectors[-1]
            vectors[-1] = {
                "nan": [*last[:-1], math.nan],
                "string": [*last[:-1], "0.5"],
                "empty_vector": [],
                "zero_vector": [0.0] * dims,
                "ragged": last[:-1],
            }[garbage]
        base64_out = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": 0 if garbage == "bad_index" else i,
                "embedding": _b64(v) if base64_out and garbage is None else v,
            }
            for i, v in enumerate(vectors)
        ]
        words = sum(len(_WORD.findall(str(t))) for t in texts)
        out: dict[str, Any] = {
            "object": "list",
            "data": data,
            "model": body.get("model", self.model),
            "usage": {"prompt_tokens": words, "total_tokens": words},
        }
        if garbage == "no_data":
            del out["data"]
        return out

    def _chat(self, body: dict[str, Any], behaviour: _Behaviour) -> dict[str, Any]:
        messages = body.get("messages") or []
        user = [
            m.get("content", "")
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user"
        ]
        content = behaviour.content
        if content is None and self._chat_fn is not None:
            content = self._chat_fn(body)
        if content is None:
            content = f"echo: {user[-1] if user else ''}"
        prompt = sum(len(_WORD.findall(str(m))) for m in user)
        completion = len(_WORD.findall(content))
        choices = (
            []
            if behaviour.garbage == "empty_data"
            else [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": behaviour.finish_reason,
                    "logprobs": None,
                }
            ]
        )
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _json(status: int, payload: Any) -> tuple[int, dict[str, str], bytes]:
    # allow_nan: the "nan" garbage must reach the client as the (invalid JSON) literal NaN.
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def _b64(vector: list[float]) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so stop() really cuts every client off.
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, out_headers, out = server._answer(self.path, raw, headers)
            try:
                self.send_response(status)
                for name, value in out_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): nothing to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean; requests are recorded instead

    return Handler
