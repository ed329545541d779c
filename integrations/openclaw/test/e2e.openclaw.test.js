// End to end with the real, pinned `openclaw` package: `memctl setup openclaw`, run from
// memoryd-client's wheel in a fresh venv (its bundled plugin, no npm install, no checkout), on
// a fresh OpenClaw home; `openclaw memory status|search` answered by memoryd; then one
// `openclaw agent --local` turn whose model (a fake
// OpenAI-compatible server) calls memory_search; the tool answer must hold a
// note only memoryd's index has, appended through memoryd a moment before, found by a
// Chinese word. That turn, as OpenClaw stored it in its SQLite store, must then be a session
// hit naming agent main and the session. Runs when OPENCLAW_BIN points at the openclaw executable (CI installs it).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { MemorydClient } from "../src/client.js";
import { authorizeHits, toMemoryHit } from "../src/shape.js";
import { memctlFromWheel, queryStore, run as runIn, startDaemon, tempDir, writeFiles } from "./daemon.js";
import { startFakeModel } from "./fake-model.js";

const OPENCLAW = process.env.OPENCLAW_BIN;
const NOTE = "- The staging database password rotates on 鲸鱼 day, every second Friday.";

/** @type {Awaited<ReturnType<typeof startDaemon>>} */
let daemon;
/** @type {Awaited<ReturnType<typeof startFakeModel>>} */
let model;
let home = "";
let workspace = "";
/** @type {Awaited<ReturnType<typeof memctlFromWheel>>} */
let wheel;

before(async () => {
  if (!OPENCLAW) return;
  wheel = await memctlFromWheel();
  daemon = await startDaemon({ config: "[index]\nsessions = true\n" }); // OpenClaw's sessions too
  home = tempDir("ochome");
  workspace = path.join(home, "workspace");
  writeFiles(workspace, { "MEMORY.md": "# Memory\n\n- The team meets on Mondays.\n" });
  // OpenClaw keeps plugin tools behind Tool Search by default: the model calls them by name.
  model = await startFakeModel({ tool: "tool_call", args: { id: "memory_search", args: { query: "鲸鱼" } }, answer: "It rotates on whale day." });
});

after(async () => {
  if (!OPENCLAW) return;
  await model.close();
  await daemon.stop();
  daemon.remove();
  wheel.remove();
  fs.rmSync(home, { recursive: true, force: true });
});

test("after `memctl setup openclaw`, OpenClaw's memory_search is memoryd's", { skip: !OPENCLAW && "set OPENCLAW_BIN to the pinned openclaw", timeout: 600_000 }, async () => {
  // A fresh OpenClaw home that knows only its model.
  const config = {
    models: {
      mode: "merge",
      providers: {
        fake: {
          baseUrl: model.baseUrl,
          apiKey: "not-a-real-key",
          api: "openai-completions",
          models: [
            {
              id: "fake-model",
              name: "Fake",
              api: "openai-completions",
              reasoning: false,
              input: ["text"],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow: 128000,
              maxTokens: 4096,
            },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: "fake/fake-model" }, workspace } },
  };
  fs.mkdirSync(path.join(home, ".openclaw"), { recursive: true });
  fs.writeFileSync(path.join(home, ".openclaw", "openclaw.json"), JSON.stringify(config, null, 2));

  // No --plugin: the plugin shipped in the wheel; no PYTHONPATH, nothing of the checkout.
  const setup = await run(wheel.memctl, ["setup", "openclaw", "--socket", daemon.socket, "--openclaw-bin", /** @type {string} */ (OPENCLAW)], { HOME: home, PYTHONPATH: "" });
  assert.equal(setup.code, 0, `${setup.out}\n${setup.err}`);
  assert.match(setup.out, /OpenClaw loads the memoryd plugin/);
  const installed = path.join(home, ".openclaw", "extensions", "memoryd");
  assert.ok(fs.existsSync(path.join(installed, "vendor", "msgpack", "index.mjs")));
  assert.ok(!fs.existsSync(path.join(installed, "test")), "a checkout's tests were installed");

  const client = new MemorydClient({ socket: daemon.socket });
  const at = await client.append({ text: NOTE, workspace: "openclaw" });
  client.close();

  // memory-core's CLI left with it: `openclaw memory` is memoryd's.
  const status = await run(/** @type {string} */ (OPENCLAW), ["memory", "status", "--json"], { HOME: home });
  assert.equal(status.code, 0, `${status.out}\n${status.err}`);
  assert.doesNotMatch(status.err, /failed during register/);
  const answer = JSON.parse(status.out.slice(status.out.indexOf("{")));
  assert.equal(answer.workspaces[0].name, "openclaw");
  const searched = await run(/** @type {string} */ (OPENCLAW), ["memory", "search", "鲸鱼"], { HOME: home });
  assert.equal(searched.code, 0, `${searched.out}\n${searched.err}`);
  assert.match(searched.out, new RegExp(`^${at.path}#L\\d+`, "m"));
  assert.match(searched.out, /鲸鱼 day, every second Friday/);

  // An embedded turn (`agent --local`) runs the plugin's hooks as a Gateway would
  // (`agent exec` runs no prompt hooks).
  const turn = await run(
    /** @type {string} */ (OPENCLAW),
    ["agent", "--local", "--agent", "main", "--message", "What do my notes say about the 鲸鱼 day?", "--json", "--timeout", "180"],
    { HOME: home },
  );
  const results = model.toolResults();
  assert.ok(results.length > 0, `the model never got a tool result\n${turn.out}\n${turn.err}`);
  // Tool Search wraps the answer: which tool ran, and what it returned.
  const wrapped = JSON.parse(results[0]);
  assert.equal(wrapped.tool.id, "openclaw:memoryd:memory_search", results[0]);
  const details = wrapped.result.details;
  assert.equal(details.backend, "memoryd", results[0]);
  const hit = details.results.find((/** @type {any} */ r) => r.snippet.includes("鲸鱼 day"));
  assert.ok(hit, results[0]);
  assert.equal(hit.path, at.path);
  assert.equal(hit.corpus, "memory");
  assert.match(hit.citation, new RegExp(`^${at.path}#L\\d+`));
  // Recall put the same note before the turn.
  const firstPrompt = JSON.stringify(model.requests[0].messages);
  assert.match(firstPrompt, /Relevant memory \(memoryd recall/);
  assert.match(firstPrompt, /鲸鱼 day, every second Friday/);
  // OpenClaw's own MEMORY.md injection still works: the plugin classifies the file as the agent's.
  assert.match(firstPrompt, /The team meets on Mondays/);
  assert.equal(turn.code, 0, `${turn.out}\n${turn.err}`);
  assert.match(turn.out, /whale day/);

  // The turn OpenClaw wrote to its SQLite store is searchable as a session of agent main.
  const store = path.join(home, ".openclaw", "agents", "main", "agent", "openclaw-agent.sqlite");
  const sessionIds = await readSessionIds(store);
  assert.ok(sessionIds.length > 0, "OpenClaw wrote no transcript_events");
  const searcher = new MemorydClient({ socket: daemon.socket });
  let found;
  for (let i = 0; i < 100 && !found; i++) {
    const r = await searcher.search({ query: "rotates whale", workspace: "openclaw", sources: ["sessions"], min_score: 0 });
    found = r.results.find((/** @type {any} */ h) => h.path.startsWith("sessions/openclaw/main/"));
    if (!found) await new Promise((r) => setTimeout(r, 100));
  }
  searcher.close();
  assert.ok(found, "the turn never became a session hit");
  const hit2 = toMemoryHit(found);
  assert.equal(hit2.agentId, "main");
  assert.ok(sessionIds.includes(hit2.sessionId), `${hit2.sessionId} not in ${sessionIds}`);
  assert.equal(authorizeHits({ agentId: "main", sandboxed: false, hits: [hit2] }).length, 1);
  assert.equal(authorizeHits({ agentId: "ops", sandboxed: false, hits: [hit2] }).length, 0);
});

/**
 * The sessions in OpenClaw's store, read as memoryd does (read-only).
 * @param {string} file
 * @returns {Promise<string[]>}
 */
async function readSessionIds(file) {
  return (await queryStore(file, "SELECT DISTINCT session_id FROM transcript_events")).map((r) => String(r.session_id));
}

/** @param {string} command @param {string[]} args @param {Record<string, string>} extra */
function run(command, args, extra) {
  return runIn(command, args, extra, workspace);
}
