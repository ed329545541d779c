// OpenClaw's memory_search and memory_get, answered by memoryd. Names, parameters and
// result shapes are memory-core's, so OpenClaw's prompts and features carry over.

import { presentHit } from "./shape.js";

export const MEMORY_SEARCH_PARAMETERS = {
  type: "object",
  properties: {
    query: { type: "string" },
    maxResults: { type: "integer", minimum: 1, maximum: 100 },
    minScore: { type: "number", minimum: 0, maximum: 1 },
    corpus: { type: "string", enum: ["memory", "sessions", "all"] },
  },
  required: ["query"],
  additionalProperties: false,
};

export const MEMORY_GET_PARAMETERS = {
  type: "object",
  properties: {
    path: { type: "string" },
    from: { type: "integer", minimum: 1 },
    lines: { type: "integer", minimum: 1 },
    corpus: { type: "string", enum: ["memory", "all"] },
  },
  required: ["path"],
  additionalProperties: false,
};

const SEARCH_DESCRIPTION =
  "Mandatory recall step: search MEMORY.md, memory/*.md (and indexed session transcripts with corpus=sessions or corpus=all) " +
  "before answering questions about prior work, decisions, dates, people, preferences, or todos. " +
  "corpus=memory restricts hits to memory files; corpus=sessions searches this agent's own session transcripts. " +
  "Session results are transcript search references, not readable memory-file paths. " +
  "If the response has unavailable=true, tell the user memory could not be searched.";

const GET_DESCRIPTION =
  "Safe exact excerpt read from MEMORY.md and memory/*.md. Session transcript paths are unsupported. " +
  "Defaults to a bounded excerpt when lines are omitted and says truncated/nextFrom when more content exists. " +
  "status=ok means the excerpt was read; status=not_found means the file does not exist; status=error means the read failed.";

/** @param {unknown} payload */
export function jsonResult(payload) {
  payload = JSON.parse(JSON.stringify(payload)); // what the model reads is what `details` holds
  return { content: [{ type: "text", text: JSON.stringify(payload, null, 2) }], details: payload };
}

/**
 * @param {import("./memory.js").MemorydMemory} memory
 * @param {{ agentId?: string, sessionKey?: string, sandboxed?: boolean, cfg: any, workspaceDir?: string }} ctx
 */
export function createSearchTool(memory, ctx) {
  return {
    label: "Memory Search",
    name: "memory_search",
    description: SEARCH_DESCRIPTION,
    parameters: MEMORY_SEARCH_PARAMETERS,
    /**
     * @param {string} _id
     * @param {any} params
     * @param {AbortSignal} [signal]
     */
    async execute(_id, params, signal) {
      const query = typeof params?.query === "string" ? params.query.trim() : "";
      if (!query) throw new Error("query required");
      const outcome = await memory.search({
        cfg: ctx.cfg,
        agentId: ctx.agentId,
        query,
        maxResults: params.maxResults,
        minScore: params.minScore,
        corpus: params.corpus,
        signal,
        workspaceDir: ctx.workspaceDir,
      });
      if (!outcome.ok) return jsonResult(outcome.unavailable);
      const visible = memory.authorize({ agentId: ctx.agentId, sandboxed: ctx.sandboxed === true, hits: outcome.hits });
      const citations = citationsMode(ctx.cfg);
      /** @type {Record<string, unknown>} */
      const payload = {
        results: visible.map((hit) => presentHit(hit, citations !== "off")),
        provider: outcome.answer.provider,
        model: outcome.answer.model,
        mode: outcome.answer.mode_used,
        citations,
        backend: "memoryd",
      };
      if (outcome.answer.degraded) payload.warning = outcome.answer.degraded;
      if (outcome.answer.notices?.length) payload.notices = outcome.answer.notices;
      if (outcome.answer.stale) payload.stale = true;
      if (visible.length < outcome.hits.length) payload.withheld = outcome.hits.length - visible.length;
      return jsonResult(payload);
    },
  };
}

/**
 * @param {import("./memory.js").MemorydMemory} memory
 * @param {{ agentId?: string, cfg: any }} ctx
 */
export function createGetTool(memory, ctx) {
  return {
    label: "Memory Get",
    name: "memory_get",
    description: GET_DESCRIPTION,
    parameters: MEMORY_GET_PARAMETERS,
    /**
     * @param {string} _id
     * @param {any} params
     */
    async execute(_id, params) {
      const relPath = typeof params?.path === "string" ? params.path.trim() : "";
      if (!relPath) throw new Error("path required");
      return jsonResult(
        await memory.read({ cfg: ctx.cfg, agentId: ctx.agentId, relPath, from: params.from, lines: params.lines }),
      );
    },
  };
}

/** @param {any} cfg */
export function citationsMode(cfg) {
  const mode = cfg?.memory?.citations;
  return mode === "on" || mode === "off" ? mode : "auto";
}
