// `openclaw memory ...` with memoryd in the slot: memory-core's CLI leaves with it, so the
// commands that map are answered by memoryd (status, search, index; Dreaming's counterpart,
// memoryd's hippocampus job, with its report). The rest of memory-core's CLI (promote, the
// REM tools, session-backfill, forget, reset) has no counterpart here: memctl's commands
// say what memoryd does instead (docs/openclaw.md).

import { MemorydMemory } from "./memory.js";
import { toMemoryHit } from "./shape.js";

/** The root command, as the manifest's cliCommands declares it. */
export const MEMORY_CLI = Object.freeze({
  name: "memory",
  description: "Search, inspect and reindex memory (answered by memoryd)",
  hasSubcommands: true,
});

const JOB_TIMEOUT_MS = 15 * 60_000; // hippocampus may call an LLM several times

/**
 * Register the CLI: in every registration mode (cli-metadata too, where the runtime is
 * unavailable: nothing here reads it until a command runs).
 * @param {any} api OpenClaw's plugin API
 * @param {import("./settings.js").Settings} settings
 */
export function registerMemoryCli(api, settings) {
  api.registerCli?.(
    async (/** @type {any} */ ctx) => {
      addMemoryCommands(ctx.program, {
        settings,
        config: ctx.config ?? {},
        workspaceDir: ctx.workspaceDir,
        resolveWorkspaceDir: runtimeResolver(api),
        print: (/** @type {string} */ line) => process.stdout.write(`${line}\n`),
      });
    },
    { descriptors: [MEMORY_CLI] },
  );
}

/**
 * The agent workspace resolver of the runtime, when this load has one (read only when a
 * command runs: reading api.runtime in cli-metadata registration throws).
 * @param {any} api
 * @returns {(cfg: any, agentId: string) => string | undefined}
 */
function runtimeResolver(api) {
  return (cfg, agentId) => {
    try {
      return api.runtime?.agent?.resolveAgentWorkspaceDir?.(cfg, agentId);
    } catch {
      return undefined;
    }
  };
}

/**
 * @typedef {{ settings: import("./settings.js").Settings, config: any, workspaceDir?: string,
 *   resolveWorkspaceDir?: (cfg: any, agentId: string) => string | undefined,
 *   print: (line: string) => void, memory?: MemorydMemory }} CliDeps
 */

/**
 * `memory status|search|index|hippocampus` on a commander program.
 * @param {any} program
 * @param {CliDeps} deps
 */
export function addMemoryCommands(program, deps) {
  const memory = program.command(MEMORY_CLI.name).description(MEMORY_CLI.description);
  memory
    .command("status")
    .description("memoryd's index of the agent's memory: files, chunks, pending work, embeddings")
    .option("--agent <id>", "Agent id (default: the default agent)")
    .option("--json", "Print JSON")
    .action((/** @type {any} */ opts) => run(deps, opts, (m, ws) => status(m, ws, opts, deps.print)));
  memory
    .command("search")
    .description("Search memory through memoryd")
    .argument("[query]", "Search query")
    .option("--query <text>", "Search query (alternative to the positional argument)")
    .option("--agent <id>", "Agent id (default: the default agent)")
    .option("--max-results <n>", "Max results", (/** @type {string} */ v) => positive(v, "--max-results"))
    .option("--min-score <n>", "Minimum score (0..1)", (/** @type {string} */ v) => score(v))
    .option("--json", "Print JSON")
    .action((/** @type {string | undefined} */ query, /** @type {any} */ opts) =>
      run(deps, opts, (m, ws) => search(m, ws, query ?? opts.query, opts, deps.print)),
    );
  memory
    .command("index")
    .description("Bring memoryd's index of the agent's memory up to date")
    .option("--agent <id>", "Agent id (default: the default agent)")
    .option("--force", "Re-read every file, not only the changed ones", false)
    .action((/** @type {any} */ opts) =>
      run(deps, opts, async (m, ws) => {
        const r = await m.call("reindex", { workspace: ws, full: Boolean(opts.force) }, { timeoutMs: JOB_TIMEOUT_MS });
        deps.print(`memoryd: ${r.files_scanned} files scanned, ${r.files_changed} changed, ${r.chunks_written} chunks written (${r.seconds}s)`);
      }),
    );
  memory
    .command("hippocampus")
    .description("memoryd's consolidation of the daily notes into MEMORY.md (Dreaming's counterpart) and its report")
    .option("--agent <id>", "Agent id (default: the default agent)")
    .option("--dry-run", "Report what it would change, change nothing", false)
    .option("--json", "Print JSON")
    .action((/** @type {any} */ opts) => run(deps, opts, (m, ws) => hippocampus(m, ws, opts, deps.print)));
  return memory;
}

/**
 * One command: a memoryd client of its own, closed at the end; an error sets the exit code.
 * @param {CliDeps} deps
 * @param {{ agent?: string }} opts
 * @param {(memory: MemorydMemory, workspace: string | undefined) => Promise<void>} body
 */
async function run(deps, opts, body) {
  const memory =
    deps.memory ??
    new MemorydMemory({ settings: deps.settings, logger: { warn: () => {} }, resolveWorkspaceDir: deps.resolveWorkspaceDir });
  try {
    await body(memory, workspaceOf(deps, opts.agent));
  } catch (err) {
    process.stderr.write(`memoryd: ${/** @type {Error} */ (err).message}\n`);
    process.exitCode = 1;
  } finally {
    if (!deps.memory) memory.close();
  }
}

/**
 * The memoryd workspace of the agent: the plugin's `workspace` setting, else the agent's
 * OpenClaw workspace folder (memoryd resolves a path inside a registered workspace).
 * @param {CliDeps} deps
 * @param {string | undefined} agent
 */
export function workspaceOf(deps, agent) {
  if (deps.settings.workspace) return deps.settings.workspace;
  const cfg = deps.config ?? {};
  if (agent) {
    const listed = (cfg.agents?.list ?? []).find((/** @type {any} */ a) => a?.id === agent);
    return deps.resolveWorkspaceDir?.(cfg, agent) ?? listed?.workspace ?? cfg.agents?.defaults?.workspace ?? deps.workspaceDir;
  }
  return cfg.agents?.defaults?.workspace ?? deps.workspaceDir;
}

/** @param {MemorydMemory} m @param {string | undefined} ws @param {any} opts @param {(l: string) => void} print */
async function status(m, ws, opts, print) {
  const answer = await m.call("status", { workspace: ws });
  if (opts.json) return print(JSON.stringify(answer, null, 2));
  const p = answer.provider ?? {};
  print(`memoryd ${answer.version} at ${answer.socket}; embeddings: ${p.name ?? "?"}${p.model ? ` (${p.model})` : ""}${p.reason ? `: ${p.reason}` : ""}`);
  for (const w of answer.workspaces ?? []) {
    print(`workspace ${w.name}: ${w.path}`);
    print(`  ${w.files} files, ${w.chunks} chunks; pending: ${w.pending_files} files, ${w.pending_vectors} vectors; vectors ${w.vector_ready ? "ready" : "not ready"}`);
    for (const d of w.degraded ?? []) print(`  degraded: ${d}`);
  }
}

/** @param {MemorydMemory} m @param {string | undefined} ws @param {string | undefined} query @param {any} opts @param {(l: string) => void} print */
async function search(m, ws, query, opts, print) {
  if (!query?.trim()) throw new Error("nothing to search for: give a query");
  const answer = await m.call("search", { query, workspace: ws, max_results: opts.maxResults, min_score: opts.minScore });
  if (opts.json) return print(JSON.stringify(answer, null, 2));
  const hits = (answer.results ?? []).map(toMemoryHit);
  if (hits.length === 0) print((answer.notices ?? []).join("\n") || "no results");
  for (const h of hits) {
    print(`${h.citation}  ${h.score.toFixed(3)}`);
    for (const line of String(h.snippet).split("\n")) print(`  ${line}`);
  }
}

/** @param {MemorydMemory} m @param {string | undefined} ws @param {any} opts @param {(l: string) => void} print */
async function hippocampus(m, ws, opts, print) {
  const r = await m.call("jobs.run", { name: "hippocampus", workspace: ws, dry_run: Boolean(opts.dryRun) }, { timeoutMs: JOB_TIMEOUT_MS });
  if (opts.json) return print(JSON.stringify(r, null, 2));
  print(`hippocampus${r.dry_run ? " (dry run)" : ""}: ${r.status}${r.message ? ` - ${r.message}` : ""}`);
  for (const [key, value] of Object.entries(r.report ?? {})) {
    print(`  ${key}: ${typeof value === "object" ? JSON.stringify(value) : value}`);
  }
  if (r.status === "failed") process.exitCode = 1;
}

/** @param {string} v @param {string} flag */
function positive(v, flag) {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a whole number of at least 1`);
  return n;
}

/** @param {string} v */
function score(v) {
  const n = Number(v);
  if (!(n >= 0 && n <= 1)) throw new Error("--min-score must be between 0 and 1");
  return n;
}
