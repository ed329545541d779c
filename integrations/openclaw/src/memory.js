// What the plugin asks memoryd, per OpenClaw agent: search, read, recall, append, status.
// A daemon that cannot be reached gives one warning (and one note when it is back); every
// call then answers "unavailable" without throwing, so OpenClaw keeps answering.

import { MemorydClient, MemorydError, ErrorCode } from "./client.js";
import { projectKey } from "./project.js";
import { authorizeHits, sourcesForCorpus, toMemoryHit, toReadResult } from "./shape.js";

/**
 * @typedef {{ warn: (msg: string) => void, info?: (msg: string) => void }} Logger
 * @typedef {{ ok: true, hits: any[], answer: any } | { ok: false, unavailable: Record<string, unknown> }} SearchOutcome
 */

export class MemorydMemory {
  /**
   * @param {{ settings: import("./settings.js").Settings, logger: Logger,
   *   resolveWorkspaceDir?: (cfg: any, agentId: string) => string | undefined,
   *   client?: MemorydClient, env?: Record<string, string | undefined> }} opts
   */
  constructor(opts) {
    this.settings = opts.settings;
    this.logger = opts.logger;
    this.resolveWorkspaceDir = opts.resolveWorkspaceDir;
    this.client =
      opts.client ??
      new MemorydClient({ socket: this.settings.socket, timeoutMs: this.settings.timeoutMs, env: opts.env });
    this.reachable = true; // until a call says otherwise
    /** @type {Map<string, any>} workspace -> last `status` entry, for OpenClaw's synchronous status() */
    this.lastStatus = new Map();
  }

  /**
   * The memoryd workspace an agent's memory lives in: the plugin's `workspace` setting, else
   * the agent's OpenClaw workspace folder (memoryd accepts a path inside a registered one).
   * Undefined lets the daemon use its only registered workspace.
   * @param {any} cfg
   * @param {string | undefined} agentId
   */
  workspaceFor(cfg, agentId) {
    if (this.settings.workspace) return this.settings.workspace;
    if (!agentId || !this.resolveWorkspaceDir) return undefined;
    try {
      return this.resolveWorkspaceDir(cfg ?? {}, agentId) || undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The project key of the agent's working directory (its OpenClaw workspace folder unless
   * the host names another), for search and recall; undefined outside a repository.
   * @param {any} cfg
   * @param {string | undefined} agentId
   * @param {string | undefined} [workspaceDir]
   */
  projectFor(cfg, agentId, workspaceDir) {
    let dir = workspaceDir;
    if (!dir && agentId && this.resolveWorkspaceDir) {
      try {
        dir = this.resolveWorkspaceDir(cfg ?? {}, agentId) || undefined;
      } catch {
        dir = undefined;
      }
    }
    return projectKey(dir) ?? undefined;
  }

  /**
   * Call memoryd; a daemon out of reach is remembered and warned about once.
   * @param {string} method
   * @param {Record<string, unknown>} params
   * @param {{ timeoutMs?: number }} [opts]
   */
  async call(method, params, opts = {}) {
    try {
      const result = await this.client.call(method, params, opts);
      if (!this.reachable) {
        this.reachable = true;
        this.logger.info?.(`memoryd: reachable again at ${this.client.socket}`);
      }
      return result;
    } catch (err) {
      if (err instanceof MemorydError && err.code === ErrorCode.UNAVAILABLE && err.data?.socket) {
        if (this.reachable) this.logger.warn(`memoryd: ${err.message}. Memory search, recall and flush are off until it is back; OpenClaw keeps answering.`);
        this.reachable = false;
      }
      throw err;
    }
  }

  /**
   * @param {{ cfg: any, agentId?: string, query: string, maxResults?: number, minScore?: number,
   *   corpus?: string, signal?: AbortSignal, workspaceDir?: string }} p
   * @returns {Promise<SearchOutcome>}
   */
  async search(p) {
    let sources;
    try {
      sources = sourcesForCorpus(p.corpus);
    } catch (err) {
      return { ok: false, unavailable: { results: [], unavailable: true, disabled: false, error: /** @type {Error} */ (err).message } };
    }
    try {
      const answer = await this.call("search", {
        query: p.query,
        workspace: this.workspaceFor(p.cfg, p.agentId),
        max_results: p.maxResults,
        min_score: p.minScore,
        sources,
        project: this.projectFor(p.cfg, p.agentId, p.workspaceDir),
      });
      return { ok: true, hits: (answer.results ?? []).map(toMemoryHit), answer };
    } catch (err) {
      return { ok: false, unavailable: unavailableResult(err) };
    }
  }

  /**
   * @param {{ agentId?: string, sandboxed?: boolean, hits: any[] }} p
   */
  authorize(p) {
    return authorizeHits(p);
  }

  /**
   * memory_get: a bounded excerpt of a memory file, or why there is none.
   * @param {{ cfg: any, agentId?: string, relPath: string, from?: number, lines?: number }} p
   */
  async read(p) {
    const lines = p.lines ?? this.settings.getLines;
    try {
      const r = await this.call("get", {
        path: p.relPath,
        workspace: this.workspaceFor(p.cfg, p.agentId),
        from: p.from,
        lines,
      });
      return toReadResult(r, lines);
    } catch (err) {
      if (err instanceof MemorydError && err.code === ErrorCode.NOT_FOUND) return { status: "not_found", path: p.relPath, text: "" };
      const code = err instanceof MemorydError ? err.code : "internal";
      return { status: "error", path: p.relPath, text: "", code, error: /** @type {Error} */ (err).message };
    }
  }

  /**
   * The daemon's recall block for a prompt, or "" (nothing relevant, or no answer in time).
   * @param {{ cfg: any, agentId?: string, prompt: string, workspaceDir?: string }} p
   */
  async recall(p) {
    const r = this.settings.recall;
    try {
      const answer = await this.call(
        "recall",
        {
          query: p.prompt,
          workspace: this.workspaceFor(p.cfg, p.agentId),
          budget_tokens: r.budgetTokens,
          min_score: r.minScore,
          project: this.projectFor(p.cfg, p.agentId, p.workspaceDir),
          agent: "openclaw", // who memctl stats counts the block for
        },
        { timeoutMs: r.timeoutMs },
      );
      return typeof answer.markdown === "string" ? answer.markdown : "";
    } catch (err) {
      if (err instanceof MemorydError && err.code === ErrorCode.TIMEOUT) {
        this.logger.warn(`memoryd: recall took longer than ${r.timeoutMs} ms; the turn goes on without it`);
      }
      return "";
    }
  }

  /**
   * The daemon's status entry for the agent's workspace (kept for the synchronous status()).
   * @param {{ cfg: any, agentId?: string }} p
   */
  async refreshStatus(p) {
    const workspace = this.workspaceFor(p.cfg, p.agentId);
    const answer = await this.call("status", { workspace });
    const entry = (answer.workspaces ?? [])[0] ?? null;
    this.lastStatus.set(workspace ?? "", { daemon: answer, workspace: entry });
    return { daemon: answer, workspace: entry };
  }

  close() {
    this.client.close();
  }
}

/**
 * memory-core's "unavailable" result, with memoryd's reason.
 * @param {unknown} err
 */
export function unavailableResult(err) {
  const e = /** @type {MemorydError} */ (err);
  const down = e instanceof MemorydError && e.unreachable;
  return {
    results: [],
    disabled: down,
    unavailable: true,
    error: e?.message ?? String(err),
    ...(e instanceof MemorydError ? { code: e.code } : {}),
    warning: down ? "Memory search is unavailable: the memoryd daemon is not running or did not answer." : "Memory search failed.",
    action: down
      ? "Tell the user memory is off until memoryd runs: `memoryd run` in a terminal, or `memoryd service install` to start it at login (or check the plugin's socket setting); then retry memory_search."
      : "Check the query and retry.",
  };
}
