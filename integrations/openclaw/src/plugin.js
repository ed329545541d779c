// Registration: the memory capability (runtime, prompt section, flush plan), the two
// memory tools, recall before a user turn, and flush writes sent through memoryd.

import { registerMemoryCli } from "./cli.js";
import { MemorydMemory } from "./memory.js";
import { createRuntime } from "./runtime.js";
import { resolveSettings } from "./settings.js";
import { createGetTool, createSearchTool } from "./tools.js";
import { FlushRuns, buildFlushPlan, flushWriteOf, memoryFileOf, sessionKindOf } from "./flush.js";
import { WRITE_TOOLS, readOf, toolCallOf } from "./observe.js";
import { guardMemoryFile, noteThroughMemoryd } from "./writes.js";
import { agentStorePath, sourceSessionOf } from "./source-session.js";

export const PLUGIN_ID = "memoryd";

/**
 * The system-prompt lines about memory (OpenClaw's promptBuilder is synchronous and gets
 * no prompt: the per-turn recall block comes from the before_prompt_build hook).
 * @param {{ availableTools: Set<string>, citationsMode?: string }} params
 */
export function memoryPromptSection({ availableTools, citationsMode }) {
  const search = availableTools.has("memory_search");
  const get = availableTools.has("memory_get");
  if (!search && !get) return [];
  const lines = ["## Memory Recall"];
  lines.push(
    search
      ? `Before answering anything about prior work, decisions, dates, people, preferences, or todos: run memory_search${get ? "; for memory-file hits, use memory_get to pull only the needed lines" : ""}. If low confidence after search, say you checked.`
      : "Before answering anything about prior work, decisions, dates, people, preferences, or todos that point to a specific memory file: run memory_get to pull only the needed lines.",
  );
  lines.push("A block headed \"Relevant memory (memoryd recall ...)\" before a message holds notes found for it; cite them as given.");
  lines.push(
    citationsMode === "off"
      ? "Citations are disabled: do not mention file paths or line numbers in replies unless the user explicitly asks."
      : "Citations: include Source: <path#line> when it helps the user verify memory snippets.",
  );
  lines.push("");
  return lines;
}

/**
 * @param {any} api OpenClaw's plugin API
 * @param {{ memory?: MemorydMemory }} [deps]
 */
export function registerMemoryd(api, deps = {}) {
  const settings = resolveSettings(api.pluginConfig);
  // `openclaw memory ...` (memory-core's CLI leaves the slot with it). Registered in every
  // mode; in cli-metadata and setup-only loads the runtime is unavailable (reading
  // api.runtime throws): nothing else is registered then.
  registerMemoryCli(api, settings);
  if (api.registrationMode === "cli-metadata" || api.registrationMode === "setup-only") {
    return { memory: undefined, flushRuns: undefined, settings };
  }
  const logger = {
    warn: (/** @type {string} */ m) => api.logger?.warn?.(m),
    info: (/** @type {string} */ m) => api.logger?.info?.(m),
  };
  const resolveWorkspaceDir = api.runtime?.agent?.resolveAgentWorkspaceDir;
  const memory =
    deps.memory ??
    new MemorydMemory({
      settings,
      logger,
      resolveWorkspaceDir: resolveWorkspaceDir ? (cfg, agentId) => resolveWorkspaceDir(cfg, agentId) : undefined,
    });
  const liveConfig = () => api.runtime?.config?.current?.() ?? api.config ?? {};
  const flushRuns = new FlushRuns();

  api.registerMemoryCapability({
    deterministicRecallToolName: "memory_search",
    promptBuilder: memoryPromptSection,
    flushPlanResolver: settings.flush.enabled ? buildFlushPlan : () => null,
    runtime: createRuntime(memory),
  });

  /** @param {any} ctx a tool factory's context */
  const toolContext = (ctx) => ({
    cfg: ctx?.getRuntimeConfig?.() ?? ctx?.runtimeConfig ?? ctx?.config ?? liveConfig(),
    agentId: ctx?.agentId,
    sessionKey: ctx?.sessionKey,
    sandboxed: ctx?.sandboxed,
    workspaceDir: ctx?.workspaceDir,
  });
  api.registerTool((/** @type {any} */ ctx) => createSearchTool(memory, toolContext(ctx)), { names: ["memory_search"] });
  api.registerTool((/** @type {any} */ ctx) => createGetTool(memory, toolContext(ctx)), { names: ["memory_get"] });

  api.on("before_prompt_build", async (/** @type {any} */ event, /** @type {any} */ ctx) => {
    if (ctx?.trigger === "memory") {
      const stateDir = api.runtime?.state?.resolveStateDir?.();
      const source = stateDir && ctx.agentId ? await sourceSessionOf(event?.messages, agentStorePath(stateDir, ctx.agentId)) : null;
      flushRuns.add(ctx.runId, {
        sessionId: source?.sessionId ?? ctx.sessionId,
        sessionKey: source ? source.sessionKey : ctx.sessionKey,
        agentId: ctx.agentId,
        workspaceDir: ctx.workspaceDir,
      });
      return undefined;
    }
    flushRuns.noteTrigger(ctx?.sessionKey, ctx?.trigger);
    if (ctx?.sessionId && (!ctx?.trigger || ctx.trigger === "user")) {
      // The user spoke: the session's turn starts clean (what it reads next may lower it).
      const kind = sessionKindOf(ctx.sessionKey, ctx.trigger);
      await memory.call("observe", { session_id: ctx.sessionId, event: "user_message", session_kind: kind }).catch(() => undefined);
    }
    if (!settings.recall.enabled || (ctx?.trigger && ctx.trigger !== "user")) return undefined;
    const prompt = typeof event?.prompt === "string" ? event.prompt : "";
    if (!prompt.trim()) return undefined;
    const markdown = await memory.recall({ cfg: liveConfig(), agentId: ctx?.agentId, prompt, workspaceDir: ctx?.workspaceDir });
    return markdown ? { prependContext: markdown } : undefined;
  });

  api.on("before_tool_call", async (/** @type {any} */ event, /** @type {any} */ ctx) => {
    const cfg = liveConfig();
    const run = flushRuns.get(ctx?.runId ?? event?.runId);
    const agentId = ctx?.agentId ?? run?.agentId;
    const workspaceDir = ctx?.workspaceDir ?? (agentId && resolveWorkspaceDir ? safeDir(resolveWorkspaceDir, cfg, agentId) : undefined);
    const workspace = memory.workspaceFor(cfg, agentId);
    const call = toolCallOf(event);
    if (!WRITE_TOOLS.has(call.name)) {
      // What the tool brings into the session, told before it runs: the session's notes then
      // take the least trusted origin it read (memoryd's rule, docs/provenance.md).
      const sessionKey = ctx?.sessionKey;
      const kind = sessionKindOf(sessionKey, flushRuns.triggerOf(sessionKey));
      const read = readOf(call, { sessionId: ctx?.sessionId, workspace, workspaceDir, kind });
      if (read) await memory.call("observe", read).catch(() => undefined);
      return undefined;
    }
    // The run's conversation (a flush runs in a hidden session of its own).
    const sessionId = run?.sessionId ?? ctx?.sessionId;
    const sessionKey = run?.sessionKey ?? ctx?.sessionKey;
    const kind = sessionKindOf(sessionKey, flushRuns.triggerOf(sessionKey));
    const write = call.name === "write" ? flushWriteOf(call.params, workspaceDir) : null;
    if (write) return noteThroughMemoryd({ memory, logger, write, run, sessionId, kind, workspace });
    const file = memoryFileOf(call.params, workspaceDir);
    if (!file || !sessionId) return undefined;
    return guardMemoryFile({ memory, file, sessionId, workspace });
  });

  api.on("agent_end", (/** @type {any} */ _event, /** @type {any} */ ctx) => {
    flushRuns.end(ctx?.runId);
  });
  api.on("gateway_stop", () => memory.close());
  return { memory, flushRuns, settings };
}

/**
 * @param {(cfg: any, agentId: string) => string} resolve
 * @param {any} cfg
 * @param {string} agentId
 */
function safeDir(resolve, cfg, agentId) {
  try {
    return resolve(cfg, agentId);
  } catch {
    return undefined;
  }
}
