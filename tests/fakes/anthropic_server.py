"""A fake Anthropic Messages API on 127.0.0.1 for driving Claude Code headless (``claude
-p``): every ``POST /v1/messages`` gets one assistant turn (as server-sent events when the
request streams) and is kept, its JSON body parsed, in ``requests``. The turn is one short
text, or what ``reply(body)`` answers: content blocks, text or ``tool_use`` (then the turn
stops for the tool, and Claude Code sends its result in the next request)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Noted."
Reply = Callable[[dict[str, Any]], list[dict[str, Any]] | None]


def tool_use(name: str, args: dict[str, Any], call_id: str = "toolu_fake_1") -> dict[str, Any]:
    """A content block asking Claude Code to run tool ``name``."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of a request's messages."""
    return [
        block
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


class FakeAnthropicServer:
    def __init__(self, reply: Reply | None = None) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def messages(self) -> list[dict[str, Any]]:
        """The bodies of the model requests received so far."""
        with self._lock:
            return [
                r["body"]
                for r in self.requests
                if r["path"].startswith("/v1/messages?") or r["path"] == "/v1/messages"
            ]

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _blocks(server: FakeAnthropicServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    chosen = server.reply(body) if server.reply is not None else None
    return chosen or [{"type": "text", "text": ANSWER}]


def _events(model: str, blocks: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    for i, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": start},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _handler_for(server: FakeAnthropicServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with server._lock:
                server.requests.append({"path": self.path, "body": body})
            if "count_tokens" in self.path:
                self._json({"input_tokens": 10})
                return
            blocks = _blocks(server, body)
            events = _events(str(body.get("model", "fake")), blocks)
            if body.get("stream"):
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            else:
                message = dict(events[0][1]["message"])
                stop = events[-2][1]["delta"]["stop_reason"]
                message.update(content=blocks, stop_reason=stop)
                self._json(message)

        def _json(self, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
