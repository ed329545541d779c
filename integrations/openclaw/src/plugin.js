// Registration: the memory capability (runtime, prompt section, flush plan), the two
// memory tools, recall before a user turn, and flush writes sent through memoryd.

import { registerMemoryCli } from "./cli.js";
import { MemorydMemory } from "./memory.js";
import { createRuntime } from "./runtime.js";
import { resolveSettings } from "./settings.js";
import { createGetTool, createSearchTool } from "./tools.js";
import { FlushRuns, buildFlushPlan, flushWriteOf, sessionKindOf } from "./flush.js";
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
    if (!settings.recall.enabled || (ctx?.trigger && ctx.trigger !== "user")) return undefined;
    const prompt = typeof event?.prompt === "string" ? event.prompt : "";
    if (!prompt.trim()) return undefined;
    const markdown = await memory.recall({ cfg: liveConfig(), agentId: ctx?.agentId, prompt, workspaceDir: ctx?.workspaceDir });
    return markdown ? { prependContext: markdown } : undefined;
  });

  api.on(
    "before_tool_call",
    async (/** @type {any} */ event, /** @type {any} */ ctx) => {
      const run = flushRuns.get(ctx?.runId ?? event?.runId);
      if (!run || event?.toolName !== "write") return undefined;
      const cfg = liveConfig();
      const agentId = ctx?.agentId ?? run.agentId;
      const write = flushWriteOf(event.params, agentId && resolveWorkspaceDir ? safeDir(resolveWorkspaceDir, cfg, agentId) : undefined);
      if (!write) return undefined;
      // The run's conversation (the flush itself runs in a hidden session of its own).
      const sessionId = run.sessionId ?? ctx?.sessionId;
      const sessionKey = run.sessionKey ?? ctx?.sessionKey;
      const kind = sessionKindOf(sessionKey, flushRuns.triggerOf(sessionKey));
      if (kind !== "interactive") {
        // memoryd's rule for flush (docs/provenance.md): cron, heartbeat and sub-agent runs
        // leave no durable notes; the host's own write would break it, so it is blocked too.
        logger.info(`memoryd: no flush notes from a ${kind} session (${sessionId ?? "unknown"})`);
        return {
          block: true,
          blockReason: `Not saved: a ${kind} session leaves no durable memory notes (memoryd's rule). Reply NO_REPLY.`,
        };
      }
      try {
        const at = await memory.call("append", {
          text: write.text,
          date: write.date,
          heading: `Session notes (${sessionId ?? "unknown"})`,
          workspace: memory.workspaceFor(cfg, agentId),
          origin: "agent", // the model wrote it in the flush turn
          ...(sessionId ? { session_id: sessionId } : {}),
          session_kind: kind,
        });
        return {
          block: true,
          blockReason: `Saved through memoryd: appended to ${at.path} lines ${at.start_line}-${at.end_line}. The notes are stored; do not write them again.`,
        };
      } catch (err) {
        logger.warn(`memoryd: the flush note goes to ${write.relativePath} without memoryd (${/** @type {Error} */ (err).message})`);
        return undefined; // the host's own append-only write keeps the note
      }
    },
    { matcher: ["write"] },
  );

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
