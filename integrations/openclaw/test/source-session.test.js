// The session a flush run's conversation belongs to, found in OpenClaw's agent store by the
// messages' idempotency keys (OpenClaw runs the flush in a hidden session of its own).

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { agentStorePath, sourceSessionOf } from "../src/source-session.js";
import { tempDir } from "./daemon.js";

const sqlite = await import("node:sqlite").catch(() => null); // Node 22.5+, as OpenClaw's 24

test("the flushed conversation's session comes from the store, else nothing", { skip: !sqlite && "node:sqlite needs Node 24" }, async () => {
  const dir = tempDir("ocsrc");
  try {
    const store = agentStorePath(dir, "main");
    fs.mkdirSync(path.dirname(store), { recursive: true });
    const db = new (/** @type {any} */ (sqlite).DatabaseSync)(store);
    // the two tables as openclaw 2026.9.6 creates them (the columns read here)
    db.exec(`CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
      CREATE TABLE transcript_event_identities (session_id TEXT NOT NULL, event_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT, parent_id TEXT, message_idempotency_key TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, event_id)) STRICT;
      INSERT INTO session_windows VALUES ('s-main', 'agent:main:main', 1, 1), ('s-cron', 'agent:main:cron:nightly', 1, 1);
      INSERT INTO transcript_event_identities VALUES ('s-main', 'e1', 4, 'message', NULL, 'run-1:user', 1), ('s-cron', 'e2', 4, 'message', NULL, 'run-2:user', 1);`);
    db.close();
    const turn = (/** @type {string} */ key) => [
      { role: "user", content: "hi", idempotencyKey: key },
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
    ];
    assert.deepEqual(await sourceSessionOf(turn("run-1:user"), store), { sessionId: "s-main", sessionKey: "agent:main:main" });
    // a cron session's flush is known as cron's (its notes are not kept)
    assert.deepEqual(await sourceSessionOf(turn("run-2:user"), store), { sessionId: "s-cron", sessionKey: "agent:main:cron:nightly" });
    assert.equal(await sourceSessionOf(turn("unknown:user"), store), null);
    assert.equal(await sourceSessionOf([{ role: "user", content: "no key" }], store), null);
    assert.equal(await sourceSessionOf(turn("run-1:user"), path.join(dir, "missing.sqlite")), null);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
