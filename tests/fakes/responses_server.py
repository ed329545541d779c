"""A fake OpenAI Responses API on 127.0.0.1 for driving Codex (``codex exec``) against a
model provider of its own (``model_providers.<name>.base_url``): every ``POST
.../responses`` gets one assistant turn as server-sent events and is kept, its JSON body
parsed, in ``requests``. The turn is one short text, or what ``reply(body)`` answers:
output items, a message (:func:`say`) or a function call (:func:`call`; Codex runs the
tool and sends its output in the next request's ``input``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Noted."
Reply = Callable[[dict[str, Any]], list[dict[str, Any]] | None]


def say(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": "msg_fake",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(
    name: str, args: dict[str, Any], call_id: str = "call_fake_1", namespace: str | None = None
) -> dict[str, Any]:
    """A function call; ``namespace``: the MCP server's (Codex offers each server's tools as
    one ``namespace`` tool named ``mcp__<server>``)."""
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }
    return {**item, "namespace": namespace} if namespace else item


def tool_outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``function_call_output`` items of a request's input."""
    items = body.get("input")
    return [
        i for i in items or [] if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


def tool_names(body: dict[str, Any]) -> list[str]:
    """The function tools a request offers, MCP servers' included (by their flat name)."""
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            names.append(str(tool.get("name") or tool.get("function", {}).get("name") or ""))
    return names


class FakeResponsesServer:
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
        """The bodies of the model requests received so far."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/responses")]

    def __enter__(self) -> FakeResponsesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _events(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    response = {"id": "resp_fake", "object": "response", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    for i, item in enumerate(items):
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": i,
                    "content_index": 0,
                    "delta": text,
                }
            )
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 12,
    }
    done = {**response, "status": "completed", "output": items, "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return events


def _handler_for(server: FakeResponsesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # model lists and the like: none
            data = json.dumps({"object": "list", "data": [], "models": []}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with server._lock:
                server.requests.append({"path": self.path.split("?")[0], "body": body})
            chosen = server.reply(body) if server.reply is not None else None
            items = chosen or [say(ANSWER)]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for event in _events(items):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

    return Handler
