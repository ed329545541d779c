// The pre-compaction flush. OpenClaw runs a flush turn (trigger "memory") in which the
// model may only read and append to memory/<today>.md with its `write` tool. The plugin
// gives OpenClaw the plan (memory-core's thresholds and safety hints), notes which runs
// are flush runs, and sends their write to memoryd's `append` instead: serialised with
// every other writer, searchable at once, and headed with the session it came from. When
// memoryd cannot take it, the host's own append-only write goes ahead, so nothing is lost.

import path from "node:path";

export const DEFAULT_SOFT_THRESHOLD_TOKENS = 4000;
export const DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES = 2 * 1024 * 1024;
export const DEFAULT_RESERVE_TOKENS_FLOOR = 20_000;
const NO_REPLY = "NO_REPLY";

const TARGET_HINT = "Store durable memories only in memory/YYYY-MM-DD.md (create memory/ if needed).";
const APPEND_ONLY_HINT = "If memory/YYYY-MM-DD.md already exists, APPEND new content only and do not overwrite existing entries.";
const READ_ONLY_HINT =
  "Treat workspace bootstrap/reference files such as MEMORY.md, DREAMS.md, SOUL.md, and AGENTS.md as read-only during this flush; never overwrite, replace, or edit them.";

/** Today's date as memoryd's `append` dates it (local time). @param {number} nowMs */
export function localDateStamp(nowMs) {
  const d = new Date(nowMs);
  const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/**
 * OpenClaw's MemoryFlushPlan, or null when the agent's config turns the flush off.
 * @param {{ cfg?: any, nowMs?: number, contextWindowTokens?: number }} [params]
 */
export function buildFlushPlan(params = {}) {
  const flushCfg = params.cfg?.agents?.defaults?.compaction?.memoryFlush;
  if (flushCfg?.enabled === false) return null;
  let softThresholdTokens = nonNegativeInt(flushCfg?.softThresholdTokens) ?? DEFAULT_SOFT_THRESHOLD_TOKENS;
  const forceFlushTranscriptBytes = nonNegativeInt(flushCfg?.forceFlushTranscriptBytes) ?? DEFAULT_FORCE_FLUSH_TRANSCRIPT_BYTES;
  const reserveTokensFloor = DEFAULT_RESERVE_TOKENS_FLOOR;
  const window = nonNegativeInt(params.contextWindowTokens);
  if (window && window > reserveTokensFloor) {
    softThresholdTokens = Math.min(softThresholdTokens, Math.floor((window - reserveTokensFloor) / 2));
  }
  const nowMs = params.nowMs ?? Date.now();
  const date = localDateStamp(nowMs);
  const fill = (/** @type {string} */ s) => s.replaceAll("YYYY-MM-DD", date);
  const prompt = [
    "Pre-compaction memory flush.",
    TARGET_HINT,
    READ_ONLY_HINT,
    APPEND_ONLY_HINT,
    "Write only the new notes (short bullet points of decisions, preferences, todos, names, dates); they are appended for you.",
    "Do NOT create timestamped variant files (e.g., YYYY-MM-DD-HHMM.md); always use the canonical YYYY-MM-DD.md filename.",
    `If nothing to store, reply with ${NO_REPLY}.`,
  ].join(" ");
  const systemPrompt = [
    "Pre-compaction memory flush turn.",
    "The session is near auto-compaction; capture durable memories to disk.",
    TARGET_HINT,
    READ_ONLY_HINT,
    APPEND_ONLY_HINT,
    `You may reply, but usually ${NO_REPLY} is correct.`,
  ].join(" ");
  return {
    softThresholdTokens,
    forceFlushTranscriptBytes,
    reserveTokensFloor,
    ...(typeof flushCfg?.model === "string" && flushCfg.model.trim() ? { model: flushCfg.model.trim() } : {}),
    prompt: `${fill(prompt)}\nCurrent time: ${new Date(nowMs).toISOString()}`,
    systemPrompt: fill(systemPrompt),
    relativePath: `memory/${date}.md`,
  };
}

/**
 * Remembers flush runs (seen by before_prompt_build with trigger "memory") until they end.
 */
export class FlushRuns {
  constructor() {
    /** @type {Map<string, { sessionId?: string, sessionKey?: string, agentId?: string, workspaceDir?: string, at: number }>} */
    this.runs = new Map();
    /** @type {Map<string, string>} session key -> the trigger of its last turn (cron, heartbeat, user...) */
    this.triggers = new Map();
  }

  /** @param {string | undefined} sessionKey @param {string | undefined} trigger */
  noteTrigger(sessionKey, trigger) {
    if (!sessionKey || !trigger || trigger === "memory") return;
    this.triggers.delete(sessionKey);
    if (this.triggers.size >= 1024) this.triggers.delete(/** @type {string} */ (this.triggers.keys().next().value));
    this.triggers.set(sessionKey, trigger);
  }

  /** @param {string | undefined} sessionKey */
  triggerOf(sessionKey) {
    return sessionKey ? this.triggers.get(sessionKey) : undefined;
  }

  /** @param {string | undefined} runId @param {{ sessionId?: string, sessionKey?: string, agentId?: string, workspaceDir?: string }} info */
  add(runId, info) {
    if (!runId) return;
    this.prune();
    this.runs.set(runId, { ...info, at: Date.now() });
  }

  /** @param {string | undefined} runId */
  get(runId) {
    return runId ? this.runs.get(runId) : undefined;
  }

  /** @param {string | undefined} runId */
  end(runId) {
    if (runId) this.runs.delete(runId);
  }

  prune() {
    const old = Date.now() - 60 * 60 * 1000; // a flush turn that never said it ended
    for (const [id, run] of this.runs) if (run.at < old) this.runs.delete(id);
  }
}

/**
 * The text and date of a `write` call made in a flush run, or null when the call does not
 * write a daily file (memory/YYYY-MM-DD.md) of the workspace.
 * @param {any} params the write tool's params ({path | file_path, content})
 * @param {string | undefined} workspaceDir
 */
export function flushWriteOf(params, workspaceDir) {
  const target = typeof params?.path === "string" ? params.path : typeof params?.file_path === "string" ? params.file_path : null;
  const text = typeof params?.content === "string" ? params.content : null;
  if (!target || text === null || !text.trim()) return null;
  let rel = target.replaceAll("\\", "/");
  if (path.isAbsolute(target)) {
    if (!workspaceDir) return null;
    rel = path.relative(workspaceDir, target).replaceAll("\\", "/");
  }
  const m = /^(?:\.\/)?memory\/(\d{4}-\d{2}-\d{2})\.md$/.exec(rel);
  return m ? { relativePath: `memory/${m[1]}.md`, date: m[1], text } : null;
}

/**
 * The workspace-relative memory file a file tool's params target (MEMORY.md, USER.md,
 * memory/**.md), or null.
 * @param {any} params
 * @param {string | undefined} workspaceDir
 */
export function memoryFileOf(params, workspaceDir) {
  const target = [params?.path, params?.file_path, params?.filePath].find((v) => typeof v === "string");
  if (!target) return null;
  let rel = target.replaceAll("\\", "/");
  if (path.isAbsolute(target)) {
    if (!workspaceDir) return null;
    rel = path.relative(workspaceDir, target).replaceAll("\\", "/");
  }
  rel = path.posix.normalize(rel.replace(/^\.\//, ""));
  if (rel.startsWith("../")) return null;
  return /^(MEMORY|memory|USER)\.md$/.test(rel) || /^memory\/.+\.md$/i.test(rel) ? rel : null;
}

/** @param {unknown} value */
function nonNegativeInt(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return null;
  const int = Math.floor(value);
  return int >= 0 ? int : null;
}

/**
 * The kind of an OpenClaw session, as memoryd's `session_kind`: what the run's trigger says
 * (a `cron` or `heartbeat` run), else what its session key says (OpenClaw's own rule: keys
 * `agent:<id>:cron:...`, `...:heartbeat`, `...:subagent:...`), else `interactive`.
 * @param {string | undefined} sessionKey
 * @param {string | undefined} [trigger] the trigger of the run the session was last seen in
 */
export function sessionKindOf(sessionKey, trigger) {
  if (trigger === "cron" || trigger === "heartbeat") return trigger;
  const key = (sessionKey ?? "").trim().toLowerCase();
  const rest = key.startsWith("agent:") ? key.split(":").slice(2).join(":") : key;
  if (rest.startsWith("cron:")) return "cron";
  if (rest === "heartbeat" || rest.endsWith(":heartbeat")) return "heartbeat";
  if (rest.startsWith("subagent:") || rest.includes(":subagent:")) return "subagent";
  return "interactive";
}
