// OpenClaw's MemoryPluginRuntime over memoryd: the search manager OpenClaw's own callers
// (`openclaw memory`, Active Memory, status pages) use, and the session-hit authorisation.

import { classifyWorkspaceMemoryPaths } from "./classify.js";
import { authorizeHits } from "./shape.js";

/**
 * @param {import("./memory.js").MemorydMemory} memory
 */
export function createRuntime(memory) {
  return {
    /** @param {{ cfg: any, agentId: string, purpose?: string }} params */
    async getMemorySearchManager(params) {
      const started = Date.now();
      return {
        manager: createManager(memory, params.cfg, params.agentId),
        debug: { backend: "builtin", purpose: params.purpose ?? "default", managerMs: Date.now() - started },
      };
    },
    resolveMemoryBackendConfig() {
      return { backend: "builtin" };
    },
    /** @param {{ agentId: string, sandboxed: boolean, hits: any[] }} params */
    async authorizeSearchHits(params) {
      return authorizeHits(params);
    },
    // OpenClaw injects MEMORY.md / USER.md by itself only for files classified as the
    // owner's or the agent's; without this it leaves them out ("does not support provenance
    // classification").
    supportsWorkspaceMemoryReadSources: true,
    classifyWorkspaceMemoryPaths,
    async closeMemorySearchManager() {},
    async closeAllMemorySearchManagers() {
      memory.close();
    },
  };
}

/**
 * @param {import("./memory.js").MemorydMemory} memory
 * @param {any} cfg
 * @param {string} agentId
 */
export function createManager(memory, cfg, agentId) {
  return {
    /**
     * @param {string} query
     * @param {{ maxResults?: number, minScore?: number, sources?: string[] }} [opts]
     */
    async search(query, opts = {}) {
      const corpus = opts.sources?.length === 1 ? opts.sources[0] : opts.sources?.length ? "all" : undefined;
      const outcome = await memory.search({ cfg, agentId, query, maxResults: opts.maxResults, minScore: opts.minScore, corpus });
      if (!outcome.ok) throw new Error(String(outcome.unavailable.error));
      return outcome.hits;
    },
    /** @param {{ relPath: string, from?: number, lines?: number }} params */
    async readFile(params) {
      const r = await memory.read({ cfg, agentId, relPath: params.relPath, from: params.from, lines: params.lines });
      if (r.status === "error") throw new Error(String(r.error));
      return r;
    },
    // OpenClaw asks for status synchronously: the last answer, refreshed in the background.
    status() {
      const workspace = memory.workspaceFor(cfg, agentId);
      memory.refreshStatus({ cfg, agentId }).catch(() => {});
      return providerStatus(memory.lastStatus.get(workspace ?? ""), memory.reachable);
    },
    async sync() {
      await memory.call("reindex", { workspace: memory.workspaceFor(cfg, agentId) });
    },
    async probeEmbeddingAvailability() {
      try {
        const s = await memory.refreshStatus({ cfg, agentId });
        const provider = s.daemon.provider ?? {};
        const ok = Boolean(provider.name) && provider.name !== "none";
        return { ok, checked: true, ...(ok ? {} : { error: provider.reason ?? "no embedding provider" }) };
      } catch (err) {
        return { ok: false, checked: true, error: /** @type {Error} */ (err).message };
      }
    },
    async probeVectorStoreAvailability() {
      try {
        const s = await memory.refreshStatus({ cfg, agentId });
        return Boolean(s.workspace?.vector_ready);
      } catch {
        return false;
      }
    },
    async close() {},
  };
}

/**
 * memoryd's status as OpenClaw's MemoryProviderStatus.
 * @param {{ daemon: any, workspace: any } | undefined} last
 * @param {boolean} reachable
 */
export function providerStatus(last, reachable) {
  if (!last) {
    return { backend: "builtin", provider: "memoryd", custom: { memoryd: reachable ? "status pending" : "not reachable" } };
  }
  const ws = last.workspace ?? {};
  const provider = last.daemon.provider ?? {};
  return {
    backend: "builtin",
    provider: `memoryd/${provider.name ?? "unknown"}`,
    model: provider.model ?? undefined,
    files: ws.files,
    chunks: ws.chunks,
    dirty: (ws.pending_files ?? 0) > 0,
    workspaceDir: ws.path,
    sources: ["memory"],
    fts: { enabled: true, available: true },
    vector: { enabled: provider.name !== "none", available: Boolean(ws.vector_ready), dims: provider.dims ?? undefined },
    custom: { memoryd: { version: last.daemon.version, socket: last.daemon.socket, degraded: ws.degraded ?? [] } },
  };
}
