// bench/mcp_slice.py's agent in Node: the TypeScript MCP SDK's Client (what Claude Code and
// most Node agents use) calling memory_search on each server in turn.
//   node mcp_slice_ts.mjs SPEC.json
// SPEC: {"sdk": the SDK's dist/esm folder, "servers": {name: {command, args, env}},
//        "queries": [...], "rounds": N}
// Prints {name: [ms, ...]} on stdout: every query `rounds` times, each to every server in
// turn (the order rotating), after one warm-up pass.
import { readFileSync } from "node:fs";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { Client } = await import(`${spec.sdk}/client/index.js`);
const { StdioClientTransport } = await import(`${spec.sdk}/client/stdio.js`);
const names = Object.keys(spec.servers);
const clients = {};
for (const name of names) {
  const s = spec.servers[name];
  const transport = new StdioClientTransport({ command: s.command, args: s.args, env: s.env, stderr: "ignore" });
  clients[name] = new Client({ name: "bench", version: "0" });
  await clients[name].connect(transport);
}
const call = async (name, query) => {
  const t = process.hrtime.bigint();
  const r = await clients[name].callTool({ name: "memory_search", arguments: { query } });
  if (r.isError) throw new Error(JSON.stringify(r.content));
  return Number(process.hrtime.bigint() - t) / 1e6;
};
for (const q of spec.queries) for (const name of names) await call(name, q);
process.stderr.write("ready\n");
// the bench starts its load, then closes our stdin: go
await new Promise((go) => process.stdin.on("end", go).resume());
const ms = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < spec.rounds; r++) {
  for (let i = 0; i < spec.queries.length; i++) {
    const k = (r + i) % names.length;
    for (const name of [...names.slice(k), ...names.slice(0, k)]) ms[name].push(await call(name, spec.queries[i]));
  }
}
for (const name of names) await clients[name].close();
process.stdout.write(JSON.stringify(ms) + "\n");
