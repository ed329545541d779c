// bench/openclaw.py's Node side: OpenClaw's memory_search tool through memory-core and
// through the memoryd plugin, in one process, the questions interleaved.
//
//   node bench/openclaw_driver.mjs OPENCLAW_PKG WORKSPACE SOCKET QUESTIONS.json PLUGIN_DIR [ROUNDS]
//
// memory-core's tool is the package's own (createMemorySearchTool, with its SQLite plugin
// state wired as OpenClaw's loader wires it); the plugin's is registered on a stand-in of
// OpenClaw's plugin API. Prints one JSON line per call: {backend, i, ms, results}.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, workspace, socket, questionsFile, pluginDir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 1);
const dist = path.join(pkg, "dist");

/** The bundle chunk (its name carries a hash) that holds `needle`. */
function chunk(prefix, needle) {
  const name = fs
    .readdirSync(dist)
    .find((f) => f.startsWith(prefix) && f.endsWith(".mjs") && fs.readFileSync(path.join(dist, f), "utf8").includes(needle));
  if (!name) throw new Error(`no ${prefix}*.mjs holding ${needle} in ${dist}`);
  return pathToFileURL(path.join(dist, name)).href;
}

const { createMemorySearchTool } = await import(chunk("tools-", "export { createMemoryGetTool, createMemorySearchTool"));
const dreaming = await import(chunk("dreaming-state-", "configureMemoryCoreDreamingState as p"));
const pluginState = await import(chunk("plugin-state-store-", "function createPluginStateKeyedStore"));
dreaming.p((options) => pluginState.r("memory-core", options, () => {}));

const config = { agents: { defaults: { workspace } } };
const memoryCore = createMemorySearchTool({ config, agentId: "main" });

const plugin = (await import(pathToFileURL(path.join(pluginDir, "index.js")).href)).default;
const tools = new Map();
plugin.register({
  pluginConfig: { socket, recall: { enabled: false } },
  config,
  logger: { warn: (m) => process.stderr.write(`${m}\n`), info: () => {} },
  runtime: { agent: { resolveAgentWorkspaceDir: () => workspace } },
  registerMemoryCapability() {},
  registerTool(factory, opts) {
    for (const name of opts.names) tools.set(name, factory);
  },
  on() {},
});
const memoryd = tools.get("memory_search")({ agentId: "main", config });

const backends = { "memory-core": memoryCore, memoryd };
const questions = JSON.parse(fs.readFileSync(questionsFile, "utf8"));

async function call(name, i, query, round = 0) {
  const started = performance.now();
  const out = await backends[name].execute(`b${i}`, { query, maxResults: 10 });
  const ms = performance.now() - started;
  const results = (out.details.results ?? []).map((r) => ({
    path: r.path,
    start_line: r.startLine,
    end_line: r.endLine,
    snippet: r.snippet,
  }));
  process.stdout.write(`${JSON.stringify({ backend: name, i, round, ms, results, error: out.details.error })}\n`);
}

// First calls (memory-core builds its index on the first search) are reported apart.
await call("memory-core", -1, questions[0]);
await call("memoryd", -1, questions[0]);
for (let round = 0; round < rounds; round++) {
  for (const [i, q] of questions.entries()) {
    const order = (i + round) % 2 ? ["memoryd", "memory-core"] : ["memory-core", "memoryd"];
    for (const name of order) await call(name, i, q, round);
  }
}
process.exit(0);
