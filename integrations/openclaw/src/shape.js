// memoryd's answers in OpenClaw's shapes (MemorySearchResult, MemoryReadResult), and which
// session hits an agent may see.

/** @typedef {"memory" | "sessions"} MemorySource */

/**
 * OpenClaw's `corpus` for memory_search, as memoryd's `sources`. Undefined: the daemon's
 * configured default (`search.sources`).
 * @param {unknown} corpus
 * @returns {MemorySource[] | undefined}
 */
export function sourcesForCorpus(corpus) {
  if (corpus === undefined || corpus === null) return undefined;
  if (corpus === "memory") return ["memory"];
  if (corpus === "sessions") return ["sessions"];
  if (corpus === "all") return ["memory", "sessions"];
  throw new Error(`corpus must be one of: memory, sessions, all (got ${JSON.stringify(corpus)})`);
}

// Transcripts memoryd copies from OpenClaw's SQLite stores are named
// sessions/openclaw/<agent>/<session id>.jsonl (both percent-encoded); a workspace's own
// sessions/<id>.jsonl have no agent.
const OPENCLAW_SESSION = /^sessions\/openclaw\/([^/]+)\/([^/]+?)(?:\.jsonl)?$/;
const WORKSPACE_SESSION = /^sessions\/(?:archive\/[^/]+\/)?([^/]+?)(?:\.jsonl)?$/;
const DAILY = /(?:^|\/)(\d{4})-(\d{2})-(\d{2})(?:[^/]*)\.md$/;

/**
 * The agent and session a session hit's path names.
 * @param {string} path
 * @returns {{ agentId?: string, sessionId: string } | null}
 */
export function sessionOf(path) {
  const oc = OPENCLAW_SESSION.exec(path);
  if (oc) return { agentId: decodeURIComponent(oc[1]), sessionId: decodeURIComponent(oc[2]) };
  const ws = WORKSPACE_SESSION.exec(path);
  return ws ? { sessionId: ws[1] } : null;
}

/**
 * When a daily note was written (its file's date, midnight UTC), or undefined.
 * @param {string} path
 */
export function observedAt(path) {
  const m = DAILY.exec(path);
  if (!m) return undefined;
  const t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isFinite(t) ? t : undefined;
}

/**
 * `path#Lstart-Lend`, as memory-core cites.
 * @param {{ path: string, startLine: number, endLine: number }} hit
 */
export function citationOf(hit) {
  const lines = hit.startLine === hit.endLine ? `#L${hit.startLine}` : `#L${hit.startLine}-L${hit.endLine}`;
  return `${hit.path}${lines}`;
}

/**
 * One memoryd search result as OpenClaw's MemorySearchResult. The lines are the
 * snippet's own (what the model reads), as memoryd's recall cites them.
 * @param {any} r a `search` result item
 */
export function toMemoryHit(r) {
  const startLine = r.snippet_start_line ?? r.start_line;
  const endLine = r.snippet_end_line ?? r.end_line;
  /** @type {Record<string, any>} */
  const hit = {
    path: r.path,
    startLine,
    endLine,
    score: r.score,
    snippet: r.snippet,
    source: r.source === "sessions" ? "sessions" : "memory",
  };
  if (typeof r.vector_score === "number") hit.vectorScore = r.vector_score;
  if (typeof r.text_score === "number") hit.textScore = r.text_score;
  hit.citation = citationOf({ path: r.path, startLine, endLine });
  const session = hit.source === "sessions" ? sessionOf(hit.path) : null;
  if (session) {
    hit.sessionId = session.sessionId;
    if (session.agentId) hit.agentId = session.agentId;
  }
  // Memory files are what the agent wrote down; a transcript mixes everyone's words, so it
  // is never taken for the owner's (memory-core's rule: never default to owner).
  const when = observedAt(hit.path);
  if (when !== undefined) {
    hit.provenance = {
      originClass: hit.source === "sessions" ? "untrusted" : "agent",
      sessionKind: "unknown",
      observedAt: when,
    };
  }
  return hit;
}

/**
 * The hit as the memory_search tool shows it: `corpus`, and the citation appended to the
 * snippet unless citations are off (memory-core's presentation).
 * @param {Record<string, any>} hit
 * @param {boolean} includeCitation
 */
export function presentHit(hit, includeCitation) {
  /** @type {Record<string, any>} */
  const presented = { ...hit, corpus: hit.source };
  if (!includeCitation) {
    delete presented.citation;
    return presented;
  }
  presented.snippet = `${String(hit.snippet).trimEnd()}\n\nSource: ${hit.citation}`;
  return presented;
}

/**
 * The hits an agent may observe: every memory-file hit, and session hits from its own
 * sessions. A sandboxed run sees no transcripts; a transcript that names no agent (the
 * workspace's own sessions/ folder) belongs to the agent whose workspace it is in.
 * @param {{ agentId?: string, sandboxed?: boolean, hits: any[] }} params
 */
export function authorizeHits({ agentId, sandboxed, hits }) {
  const me = agentId?.trim().toLowerCase();
  return hits.filter((hit) => {
    if (hit.source !== "sessions") return true;
    if (sandboxed) return false;
    const session = sessionOf(hit.path);
    if (!session) return false;
    if (!session.agentId) return true;
    return me !== undefined && session.agentId.toLowerCase() === me;
  });
}

/**
 * memoryd's `get` answer as OpenClaw's MemoryReadResult.
 * @param {any} r
 * @param {number | undefined} askedLines
 */
export function toReadResult(r, askedLines) {
  const from = r.from ?? 1;
  const lastRead = from + (r.lines ?? 0) - 1;
  /** @type {Record<string, any>} */
  const out = { status: "ok", path: r.path, text: r.text, from, lines: r.lines };
  if (typeof r.total_lines === "number" && lastRead < r.total_lines && askedLines !== undefined) {
    out.truncated = true;
    out.nextFrom = lastRead + 1;
  }
  return out;
}
