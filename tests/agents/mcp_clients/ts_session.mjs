// A scripted session with the TypeScript MCP SDK's Client against `memctl mcp`:
//   node ts_session.mjs stdio MEMCTL [ARGS...]   |   node ts_session.mjs http URL TOKEN
// Prints one JSON object: the tools listed and what each call answered.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: ["mcp", ...rest], env: process.env, stderr: "pipe" })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${rest[0]}` } },
      });
const client = new Client({ name: "memoryd-ts-test", version: "0.0.0" });
await client.connect(transport);
const out = {
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  tools: (await client.listTools()).tools,
  search: await client.callTool({ name: "memory_search", arguments: { query: "billing schema invoices" } }),
  get: await client.callTool({ name: "memory_get", arguments: { path: "MEMORY.md", from: 3, lines: 1 } }),
  append: await client.callTool({ name: "memory_append", arguments: { text: "TS client was here.", date: "2025-03-02" } }),
  status: await client.callTool({ name: "memory_status", arguments: {} }),
  bad: await client.callTool({ name: "memory_search", arguments: { query: "x", maxResults: 0 } }),
};
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
