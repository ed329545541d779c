// The plugin's write path: a session's notes go through memoryd, with the session's trust.
//
// - A `write` to today's daily note (memory/YYYY-MM-DD.md) is sent to memoryd's `append`
//   instead, in every run: serialised with every other writer, searchable at once, and
//   recorded with the session, so memoryd gives the lines the least trusted origin the
//   session read (a note the model writes after reading a web page is untrusted, whatever it
//   says). In a flush run (the pre-compaction turn) it is the conversation's notes: headed with
//   its session, `via: "flush"`, and cron, heartbeat and sub-agent runs write none.
// - Any other change to a memory file (MEMORY.md, USER.md, memory/**.md: `write`, `edit`,
//   `apply_patch`) from a session that read outside content since its user's last message
//   is refused: what is there is the owner's and the agent's, and a line written by a file
//   tool carries no record (it would count as the owner's).
// When memoryd cannot take a note, the host's own write goes ahead: nothing is lost.

/**
 * @param {{ memory: import("./memory.js").MemorydMemory, logger: { warn: (m: string) => void, info: (m: string) => void },
 *   write: { text: string, date: string, relativePath: string }, run: any,
 *   sessionId?: string, kind: string, workspace?: string }} p
 */
export async function noteThroughMemoryd({ memory, logger, write, run, sessionId, kind, workspace }) {
  if (run && kind !== "interactive") {
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
      ...(run ? { heading: `Session notes (${sessionLabel(sessionId ?? "unknown")})`, via: "flush" } : {}),
      workspace,
      origin: "agent", // the model wrote it; memoryd lowers it to what the session read
      ...(sessionId ? { session_id: sessionId } : {}),
      session_kind: kind,
    });
    const held =
      at.origin === "untrusted" || at.origin === "system"
        ? ` Recorded ${at.origin}: this session read outside content, so the note is searchable but not recalled until the user approves it (memctl review).`
        : "";
    return {
      block: true,
      blockReason: `Saved through memoryd: appended to ${at.path} lines ${at.start_line}-${at.end_line}.${held} The notes are stored; do not write them again.`,
    };
  } catch (err) {
    logger.warn(`memoryd: the note goes to ${write.relativePath} without memoryd (${/** @type {Error} */ (err).message})`);
    return undefined; // the host's own append-only write keeps the note
  }
}

/**
 * A session id as memoryd writes it in a heading (daemon/memoryd/files/session_headings.py,
 * session_label): what `memctl forget --session` looks for, so the heading goes with the
 * session's notes.
 * @param {string} sessionId
 */
export function sessionLabel(sessionId) {
  return sessionId.replace(/[^A-Za-z0-9._:-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80) || "unnamed";
}

/**
 * @param {{ memory: import("./memory.js").MemorydMemory, file: string, sessionId: string, workspace?: string }} p
 */
export async function guardMemoryFile({ memory, file, sessionId, workspace }) {
  /** @type {any} */
  let state = null;
  try {
    state = await memory.call("observe", { session_id: sessionId, event: "read", ...(workspace ? { workspace } : {}) });
  } catch {
    return undefined; // memoryd unreachable: the host's tools work as without it
  }
  if (state?.origin !== "untrusted" && state?.origin !== "system") return undefined;
  const why = state.what ? ` (${state.what})` : "";
  return {
    block: true,
    blockReason:
      `Not written: this session read outside content since the user's last message${why}, so it cannot change ${file}. ` +
      "To keep a note, write it to today's daily note (memory/YYYY-MM-DD.md): memoryd records it as untrusted, for the user's review.",
  };
}
