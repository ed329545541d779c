// End to end with the real, pinned `openclaw`, for what the first e2e test does not reach:
// - a session OpenClaw deleted through its Gateway (`openclaw sessions delete`) leaves its rows
//   for `session_transcript_archives`; memoryd, registered afterwards, copies it from there and
//   finds its words as a session hit of agent main;
// - OpenClaw's own pre-compaction memory flush, driven by a real `openclaw agent --local` turn
//   whose transcript crosses the compaction settings: the flush turn's write goes through the
//   plugin to memoryd's `append` (searchable at once, recorded with the session);
// - the plugin in a running Gateway: a turn through it gets memoryd's recall, and its
//   memory_search answers from memoryd.
// Runs when OPENCLAW_BIN points at the openclaw executable (CI installs it).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { MemorydClient } from "../src/client.js";
import { localDateStamp } from "../src/flush.js";
import { memctl, queryStore, run as runIn, startDaemon, tempDir, writeFiles } from "./daemon.js";
import { startFakeModel } from "./fake-model.js";

const OPENCLAW = process.env.OPENCLAW_BIN;
const TOKEN = "e2e-gateway-token";
const ARCHIVED = "The deploy freeze word is 蜂鸟, said in a session deleted later.";
const FLUSHED = "- The pager rotation moves to Tuesdays (flushed before compaction).";

/** @type {Awaited<ReturnType<typeof startDaemon>>} */
let daemon;
/** @type {Awaited<ReturnType<typeof startFakeModel>>} */
let model;
let home = "";
let workspace = "";
/** @type {Record<string, string>} */
let env = {};

before(async () => {
  if (!OPENCLAW) return;
  daemon = await startDaemon({ config: "[index]\nsessions = true\n" });
  home = tempDir("ochome");
  workspace = path.join(home, "workspace");
  writeFiles(workspace, { "MEMORY.md": "# Memory\n\n- The team meets on Mondays.\n" });
  model = await startFakeModel({ tool: "", args: {}, answer: "", route: reply });
  env = { HOME: home, OPENCLAW_GATEWAY_TOKEN: TOKEN, OPENCLAW_GATEWAY_PORT: String(await freePort()) };
  const config = {
    models: { mode: "merge", providers: { fake: provider(model.baseUrl) } },
    agents: {
      defaults: {
        model: { primary: "fake/fake-model" },
        workspace,
      },
    },
  };
  fs.mkdirSync(path.join(home, ".openclaw"), { recursive: true });
  fs.writeFileSync(path.join(home, ".openclaw", "openclaw.json"), JSON.stringify(config, null, 2));
});

after(async () => {
  if (!OPENCLAW) return;
  await model.close();
  await daemon.stop();
  daemon.remove();
  fs.rmSync(home, { recursive: true, force: true });
});

/**
 * The fake model's answers: the flush turn writes its note to today's daily file, the
 * compaction's summary request gets a summary, any other turn a short answer.
 * @param {any} request
 */
function reply(request) {
  const text = JSON.stringify(request.messages ?? []);
  const tools = (request.tools ?? []).map((/** @type {any} */ t) => t.function?.name);
  if (text.includes("Pre-compaction memory flush")) {
    if ((request.messages ?? []).some((/** @type {any} */ m) => m.role === "tool")) return { role: "assistant", content: "NO_REPLY" };
    const args = { path: `memory/${localDateStamp(Date.now())}.md`, content: `${FLUSHED}\n` };
    const call = tools.includes("write") ? { name: "write", arguments: JSON.stringify(args) } : { name: "tool_call", arguments: JSON.stringify({ id: "write", args }) };
    return { role: "assistant", content: null, tool_calls: [{ id: "call_flush", type: "function", function: call }] };
  }
  if (tools.length === 0) return { role: "assistant", content: "## Summary\n\n- A short conversation about deploys." };
  if (text.includes("GATEWAY-SEARCH") && !(request.messages ?? []).some((/** @type {any} */ m) => m.role === "tool")) {
    const args = { id: "memory_search", args: { query: "pager rotation" } }; // behind Tool Search
    return { role: "assistant", content: null, tool_calls: [{ id: "call_search", type: "function", function: { name: "tool_call", arguments: JSON.stringify(args) } }] };
  }
  return { role: "assistant", content: "Noted." };
}

/** @param {string} baseUrl */
function provider(baseUrl) {
  const model = { id: "fake-model", name: "Fake", api: "openai-completions", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 128000, maxTokens: 4096 };
  return { baseUrl, apiKey: "not-a-real-key", api: "openai-completions", models: [model] };
}

test("a session OpenClaw's Gateway deleted is read from its archive", { skip: !OPENCLAW && "set OPENCLAW_BIN to the pinned openclaw", timeout: 600_000 }, async () => {
  const gateway = await startGateway();
  let deleted;
  try {
    const turn = await run(/** @type {string} */ (OPENCLAW), ["agent", "--agent", "main", "--session-key", "agent:main:scratch", "--message", ARCHIVED, "--json", "--timeout", "120"], env);
    assert.equal(turn.code, 0, `${turn.out}\n${turn.err}`);
    deleted = await run(/** @type {string} */ (OPENCLAW), ["sessions", "delete", "agent:main:scratch", "--yes", "--json"], env);
  } finally {
    await gateway.stop();
  }
  assert.equal(deleted.code, 0, `${deleted.out}\n${deleted.err}`);
  const store = path.join(home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite");
  const archives = await queryStore(store, "SELECT session_id, reason, encoding FROM session_transcript_archives");
  assert.equal(archives.length, 1, JSON.stringify(archives));
  const sessionId = String(archives[0].session_id);
  assert.equal(archives[0].reason, "deleted");
  assert.deepEqual(await queryStore(store, "SELECT seq FROM transcript_events WHERE session_id = ?", sessionId), []);

  // memoryd learns of this OpenClaw home only now: the session exists only as an archive.
  const setup = await run(memctl(), ["setup", "openclaw", "--socket", daemon.socket, "--openclaw-bin", /** @type {string} */ (OPENCLAW)], env);
  assert.equal(setup.code, 0, `${setup.out}\n${setup.err}`);
  const client = new MemorydClient({ socket: daemon.socket });
  try {
    const hit = await poll(async () => {
      const r = await client.search({ query: "蜂鸟", workspace: "openclaw", sources: ["sessions"], min_score: 0 });
      return r.results.find((/** @type {any} */ h) => h.path === `sessions/openclaw/main/${sessionId}.jsonl`);
    });
    assert.ok(hit, "the deleted session never became a session hit");
    const status = await client.call("status", { workspace: "openclaw" });
    const report = status.workspaces[0].openclaw.stores.find((/** @type {any} */ s) => s.agent === "main");
    assert.ok(report, JSON.stringify(status.workspaces[0].openclaw));
  } finally {
    client.close();
  }
});

test("OpenClaw's pre-compaction flush writes through memoryd's append", { skip: !OPENCLAW && "set OPENCLAW_BIN to the pinned openclaw", timeout: 600_000 }, async () => {
  // Compact before the next turn once the transcript holds anything, and flush first.
  const configPath = path.join(home, ".openclaw", "openclaw.json");
  const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
  config.agents.defaults.compaction = { maxActiveTranscriptBytes: 1, memoryFlush: { forceFlushTranscriptBytes: 1 } };
  fs.writeFileSync(configPath, JSON.stringify(config, null, 2));
  const first = await run(/** @type {string} */ (OPENCLAW), ["agent", "--local", "--agent", "main", "--message", "We talked about the pager.", "--json", "--timeout", "120"], env);
  assert.equal(first.code, 0, `${first.out}\n${first.err}`);
  const flushesBefore = model.requests.filter((r) => JSON.stringify(r.messages).includes("Pre-compaction memory flush")).length;
  // The transcript now crosses maxActiveTranscriptBytes: this turn compacts first, and flushes before that.
  const second = await run(/** @type {string} */ (OPENCLAW), ["agent", "--local", "--agent", "main", "--message", "And what else?", "--json", "--timeout", "120"], env);
  assert.equal(second.code, 0, `${second.out}\n${second.err}`);
  const flushes = model.requests.filter((r) => JSON.stringify(r.messages).includes("Pre-compaction memory flush"));
  assert.ok(flushes.length > flushesBefore, `OpenClaw ran no flush turn\n${second.err.slice(-3000)}`);

  const store = path.join(home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite");
  const [main] = await queryStore(store, "SELECT current_session_id FROM session_nodes WHERE session_key = 'agent:main:main'");
  const sessionId = String(main.current_session_id);
  const client = new MemorydClient({ socket: daemon.socket });
  try {
    // Read-your-writes: searchable as soon as the turn is over, no wait for a watcher.
    const r = await client.call("search", { query: "pager rotation Tuesdays", workspace: "openclaw", sources: ["memory"], min_score: 0 });
    const hit = r.results.find((/** @type {any} */ h) => h.snippet.includes("flushed before compaction"));
    assert.ok(hit, JSON.stringify(r.results));
    assert.equal(hit.path, `memory/${localDateStamp(Date.now())}.md`);
    assert.equal(hit.origin, "agent", JSON.stringify(hit));
    assert.equal(hit.session_id, sessionId, JSON.stringify(hit));
  } finally {
    client.close();
  }
  const daily = fs.readFileSync(path.join(workspace, "memory", `${localDateStamp(Date.now())}.md`), "utf8");
  assert.match(daily, new RegExp(`## Session notes \\(${sessionId}`));
  assert.equal(daily.split("flushed before compaction").length, 2, daily); // once: OpenClaw's own write was blocked
});

test("in a running Gateway, memory_search and recall are memoryd's", { skip: !OPENCLAW && "set OPENCLAW_BIN to the pinned openclaw", timeout: 600_000 }, async () => {
  const gateway = await startGateway();
  const before = model.requests.length;
  let turn;
  try {
    turn = await run(/** @type {string} */ (OPENCLAW), ["agent", "--agent", "main", "--session-key", "agent:main:gw", "--message", "GATEWAY-SEARCH: when is the pager rotation?", "--json", "--timeout", "120"], env);
  } finally {
    await gateway.stop();
  }
  assert.equal(turn.code, 0, `${turn.out}\n${turn.err}`);
  const requests = model.requests.slice(before);
  const results = requests.flatMap((r) => (r.messages ?? []).filter((/** @type {any} */ m) => m.role === "tool" && String(m.content).includes("memory_search")));
  assert.ok(results.length > 0, `no memory_search result reached the model\n${turn.err.slice(-3000)}`);
  const wrapped = JSON.parse(typeof results[0].content === "string" ? results[0].content : JSON.stringify(results[0].content));
  assert.equal(wrapped.tool.id, "openclaw:memoryd:memory_search");
  assert.equal(wrapped.result.details.backend, "memoryd");
  assert.ok(wrapped.result.details.results.some((/** @type {any} */ r) => r.snippet.includes("flushed before compaction")), JSON.stringify(wrapped));
  const first = requests.find((r) => JSON.stringify(r.messages).includes("GATEWAY-SEARCH"));
  assert.match(JSON.stringify(first?.messages), /Relevant memory \(memoryd recall/); // recall before the turn
});

/** A Gateway for the test's OpenClaw home, up when it accepts connections. */
async function startGateway() {
  const child = spawn(/** @type {string} */ (OPENCLAW), ["gateway", "run", "--port", env.OPENCLAW_GATEWAY_PORT, "--auth", "token", "--bind", "loopback", "--allow-unconfigured"], {
    env: { ...process.env, ...env },
    cwd: workspace,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.on("data", (c) => (log += c));
  child.stderr?.on("data", (c) => (log += c));
  const deadline = Date.now() + 120_000;
  while (!(await connects(Number(env.OPENCLAW_GATEWAY_PORT)))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the Gateway did not start\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** @param {number} port */
function connects(port) {
  return new Promise((resolve) => {
    const c = net.createConnection({ port, host: "127.0.0.1" });
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });
}

async function freePort() {
  const server = net.createServer();
  await new Promise((r) => server.listen(0, "127.0.0.1", () => r(null)));
  const port = /** @type {import("node:net").AddressInfo} */ (server.address()).port;
  await new Promise((r) => server.close(() => r(null)));
  return port;
}

/**
 * @template T
 * @param {() => Promise<T | undefined>} probe
 * @returns {Promise<T | undefined>}
 */
async function poll(probe) {
  for (let i = 0; i < 150; i++) {
    const got = await probe();
    if (got) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/** @param {string} command @param {string[]} args @param {Record<string, string>} extra */
function run(command, args, extra) {
  return runIn(command, args, extra, workspace);
}
