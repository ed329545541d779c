// `openclaw memory ...` with memoryd in the slot: the plugin registers the CLI in OpenClaw's
// cli-metadata load (where reading api.runtime throws) without touching the runtime, and the
// commands (through the real commander OpenClaw passes them) answer from a real memoryd.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { Command } from "commander";
import plugin from "../index.js";
import { addMemoryCommands, MEMORY_CLI, workspaceOf } from "../src/cli.js";
import { MemorydClient } from "../src/client.js";
import { resolveSettings } from "../src/settings.js";
import { startDaemon, tempDir, writeFiles } from "./daemon.js";

const manifest = JSON.parse(fs.readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8"));

test("in a cli-metadata load the plugin registers the memory CLI only, and never reads the runtime", () => {
  /** @type {any[]} */
  const cli = [];
  const registered = /** @type {string[]} */ ([]);
  const api = {
    registrationMode: "cli-metadata",
    pluginConfig: {},
    get runtime() {
      throw new Error('Plugin "memoryd" runtime is intentionally unavailable during "cli-metadata" registration.');
    },
    registerCli: (/** @type {any} */ registrar, /** @type {any} */ opts) => cli.push({ registrar, opts }),
    registerMemoryCapability: () => registered.push("capability"),
    registerTool: () => registered.push("tool"),
    on: (/** @type {string} */ name) => registered.push(name),
  };
  plugin.register(api);
  assert.deepEqual(registered, []);
  assert.equal(cli.length, 1);
  assert.deepEqual(cli[0].opts.descriptors, [MEMORY_CLI]);
  // The manifest declares the same root command, so help and routing need no plugin code.
  assert.deepEqual(manifest.cliCommands, [{ ...MEMORY_CLI }]);
});

test("the agent's memoryd workspace: the plugin setting, the agent's folder, the default's", () => {
  const settings = resolveSettings({});
  const config = { agents: { defaults: { workspace: "/w/default" }, list: [{ id: "ops", workspace: "/w/ops" }] } };
  assert.equal(workspaceOf({ settings, config, print: () => {} }, undefined), "/w/default");
  assert.equal(workspaceOf({ settings, config, print: () => {} }, "ops"), "/w/ops");
  assert.equal(workspaceOf({ settings, config: {}, workspaceDir: "/w/ctx", print: () => {} }, undefined), "/w/ctx");
  assert.equal(workspaceOf({ settings: resolveSettings({ workspace: "alice" }), config, print: () => {} }, "ops"), "alice");
});

describe("openclaw memory status|search|index|hippocampus against a real memoryd", () => {
  /** @type {Awaited<ReturnType<typeof startDaemon>>} */
  let daemon;
  let workspace = "";

  before(async () => {
    daemon = await startDaemon();
    workspace = tempDir("mdcli");
    writeFiles(workspace, { "MEMORY.md": "# Memory\n\n- The deploy window is Tuesday at nine.\n" });
    const admin = new MemorydClient({ socket: daemon.socket });
    await admin.call("workspace.add", { path: workspace, name: "oc" });
    await admin.call("reindex", { workspace: "oc" });
    admin.close();
  });
  after(async () => {
    await daemon.stop();
    daemon.remove();
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  /** @param {string[]} argv */
  async function memory(...argv) {
    const lines = /** @type {string[]} */ ([]);
    const program = new Command().exitOverride();
    const settings = resolveSettings({ socket: daemon.socket });
    addMemoryCommands(program, { settings, config: { agents: { defaults: { workspace } } }, print: (l) => lines.push(l) });
    process.exitCode = 0;
    await program.parseAsync(["memory", ...argv], { from: "user" });
    const code = process.exitCode;
    process.exitCode = 0;
    return { out: lines.join("\n"), code };
  }

  test("status names the workspace, its files and chunks", async () => {
    const { out, code } = await memory("status");
    assert.equal(code, 0);
    assert.match(out, /^memoryd \S+ at .*memoryd\.sock; embeddings: none/m);
    assert.match(out, new RegExp(`workspace oc: ${workspace}`));
    assert.match(out, /1 files, \d+ chunks/);
    const json = JSON.parse((await memory("status", "--json")).out);
    assert.equal(json.workspaces[0].name, "oc");
  });

  test("search prints citations and snippets; --json the daemon's answer", async () => {
    const { out, code } = await memory("search", "deploy window");
    assert.equal(code, 0);
    assert.match(out, /^MEMORY\.md#L\d+(-L\d+)? {2}\d\.\d{3}$/m);
    assert.match(out, /deploy window is Tuesday/);
    const json = JSON.parse((await memory("search", "--query", "deploy", "--max-results", "1", "--json")).out);
    assert.equal(json.results.length, 1);
    const none = await memory("search", "the and of");
    assert.match(none.out, /only stop words/);
  });

  test("index reindexes; hippocampus --dry-run reports and changes nothing", async () => {
    assert.match((await memory("index", "--force")).out, /^memoryd: 1 files scanned/);
    const before = fs.readFileSync(`${workspace}/MEMORY.md`, "utf8");
    const { out } = await memory("hippocampus", "--dry-run");
    assert.match(out, /^hippocampus \(dry run\): (ok|skipped)/);
    assert.equal(fs.readFileSync(`${workspace}/MEMORY.md`, "utf8"), before);
  });
});
