// OpenClaw 2026.9 runs the pre-compaction flush in a hidden session of its own
// (`agent:<id>:internal-session-effects:<run>`) over a detached copy of the conversation that
// is about to be compacted, and the flush run's hooks name only that hidden session. The
// conversation's own session is found from the copied messages: OpenClaw records each user
// message's idempotencyKey with its session (`transcript_event_identities`) in the agent's
// store, which is read here read-only, once per flush run.

import path from "node:path";

/**
 * The store of an agent under OpenClaw's state folder.
 * @param {string} stateDir @param {string} agentId
 */
export function agentStorePath(stateDir, agentId) {
  return path.join(stateDir, "agents", agentId, "agent", "openclaw-agent.sqlite");
}

/**
 * The session (id and key) the flushed conversation belongs to, or null when the store does
 * not say (no store, no recorded key, an older OpenClaw).
 * @param {unknown} messages the flush run's messages (before_prompt_build's `event.messages`)
 * @param {string} store the agent's openclaw-agent.sqlite
 * @returns {Promise<{ sessionId: string, sessionKey?: string } | null>}
 */
export async function sourceSessionOf(messages, store) {
  const keys = (Array.isArray(messages) ? messages : [])
    .map((/** @type {any} */ m) => (m?.role === "user" && typeof m.idempotencyKey === "string" ? m.idempotencyKey : null))
    .filter((k) => k !== null)
    .reverse()
    .slice(0, 8);
  if (keys.length === 0) return null;
  let db;
  try {
    const { DatabaseSync } = await import("node:sqlite"); // Node 24, as OpenClaw needs
    db = new DatabaseSync(store, { readOnly: true, timeout: 1000 });
    const byKey = db.prepare("SELECT session_id FROM transcript_event_identities WHERE message_idempotency_key = ? LIMIT 1");
    for (const key of keys) {
      const row = /** @type {any} */ (byKey.get(key));
      if (!row) continue;
      const sessionId = String(row.session_id);
      const win = /** @type {any} */ (db.prepare("SELECT session_key FROM session_windows WHERE session_id = ?").get(sessionId));
      return { sessionId, ...(win?.session_key ? { sessionKey: String(win.session_key) } : {}) };
    }
    return null;
  } catch {
    return null; // not OpenClaw's store as we know it: the flush run's own session stands
  } finally {
    db?.close();
  }
}
