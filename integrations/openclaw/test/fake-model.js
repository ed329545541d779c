// A small OpenAI-compatible model for the end-to-end test: /v1/chat/completions asks for
// one tool call first, then answers once the tool's result is in the conversation. It
// records every request so the test can read what the tool returned. Streams (SSE) when
// asked to, as OpenClaw does.

import http from "node:http";

/**
 * @param {{ tool: string, args: Record<string, unknown>, answer: string, route?: (request: any) => any }} script
 *   `route`: a reply message of its own for a request (an OpenClaw flush or compaction turn), or null
 */
export async function startFakeModel(script) {
  /** @type {any[]} */
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method === "GET" && req.url?.endsWith("/models")) {
        json(res, { object: "list", data: [{ id: "fake-model", object: "model", owned_by: "test" }] });
        return;
      }
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      const request = JSON.parse(body || "{}");
      requests.push(request);
      const messages = Array.isArray(request.messages) ? request.messages : [];
      const toolDone = messages.some((/** @type {any} */ m) => m.role === "tool");
      const routed = script.route?.(request) ?? null;
      const message = routed
        ? routed
        : toolDone
        ? { role: "assistant", content: script.answer }
        : {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: script.tool, arguments: JSON.stringify(script.args) } }],
          };
      const finish = message.tool_calls ? "tool_calls" : "stop";
      if (request.stream) stream(res, message, finish);
      else
        json(res, {
          id: "chatcmpl-fake",
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: "fake-model",
          choices: [{ index: 0, message, finish_reason: finish }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        });
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", () => r(null)));
  const addr = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    baseUrl: `http://127.0.0.1:${addr.port}/v1`,
    requests,
    /** The tool results the model was sent, in order. */
    toolResults() {
      return requests.flatMap((r) => (r.messages ?? []).filter((/** @type {any} */ m) => m.role === "tool")).map((/** @type {any} */ m) =>
        typeof m.content === "string" ? m.content : JSON.stringify(m.content),
      );
    },
    close: () => new Promise((r) => server.close(() => r(null))),
  };
}

/** @param {http.ServerResponse} res @param {unknown} payload */
function json(res, payload) {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(payload));
}

/**
 * @param {http.ServerResponse} res
 * @param {any} message
 * @param {string} finish
 */
function stream(res, message, finish) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const base = { id: "chatcmpl-fake", object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model: "fake-model" };
  const send = (/** @type {unknown} */ chunk) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  const delta = message.tool_calls
    ? { role: "assistant", tool_calls: message.tool_calls.map((/** @type {any} */ c, /** @type {number} */ index) => ({ index, ...c })) }
    : { role: "assistant", content: message.content };
  send({ ...base, choices: [{ index: 0, delta, finish_reason: null }] });
  send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] });
  send({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
  res.end("data: [DONE]\n\n");
}
