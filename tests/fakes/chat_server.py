"""A fake OpenAI Chat Completions API on 127.0.0.1 for driving agents (Hermes) end to end:
every ``POST .../chat/completions`` gets one assistant turn (server-sent chunks when the
request streams, one JSON answer otherwise) and is kept, its JSON body parsed, in
``requests``. The turn is one short text, or what ``reply(body)`` answers: a text
(:func:`text`) or tool calls (:func:`tool_call`; the agent runs them and sends their
results as ``tool`` messages in the next request)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Noted."
Reply = Callable[[dict[str, Any]], dict[str, Any] | None]


def text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_call(name: str, args: dict[str, Any], call_id: str = "call_fake_1") -> dict[str, Any]:
    fn = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": fn}],
    }


def tool_results(body: dict[str, Any]) -> list[str]:
    """The contents of the ``tool`` messages of a request."""
    return [str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("function", {}).get("name")) for t in body.get("tools") or []]


class FakeChatServer:
    def __init__(self, reply: Reply | None = None) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def _chunks(model: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model}
    calls = message.get("tool_calls")
    delta: dict[str, Any] = {"role": "assistant"}
    if calls:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
    else:
        delta["content"] = message.get("content") or ""
    finish = "tool_calls" if calls else "stop"
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
            "usage": _usage(),
        },
    ]


def _handler_for(server: FakeChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # /models: the one fake model
            self._json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with server._lock:
                server.requests.append({"path": self.path.split("?")[0], "body": body})
            message = (server.reply(body) if server.reply is not None else None) or text(ANSWER)
            model = str(body.get("model", "fake-model"))
            if not body.get("stream"):
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                choice = {"index": 0, "message": message, "finish_reason": finish}
                self._json(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": model,
                        "choices": [choice],
                        "usage": _usage(),
                    }
                )
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for chunk in _chunks(model, message):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

        def _json(self, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
