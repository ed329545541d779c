// The poisoning scenarios with the real, pinned `openclaw` (issue 34; bench/poisoning.py prints
// the same as a table): a web page's "remember this rule" never reaches the next session's
// model, and an honest note does. Runs when OPENCLAW_BIN points at the openclaw executable.

import { test } from "node:test";
import assert from "node:assert/strict";
import { runScenario } from "./poisoning.js";

const OPENCLAW = process.env.OPENCLAW_BIN;
const skip = !OPENCLAW && "set OPENCLAW_BIN to the pinned openclaw";

test("a rule a web page got written is untrusted, waits in review, and is not recalled", { skip, timeout: 600_000 }, async () => {
  const got = await runScenario(/** @type {string} */ (OPENCLAW), "web page");
  assert.equal(got.on_disk, true, JSON.stringify(got));
  assert.equal(got.origin, "untrusted", JSON.stringify(got));
  assert.equal(got.injected, false, JSON.stringify(got));
  assert.equal(got.waits, true, JSON.stringify(got));
});

test("an honest note is the agent's and reaches the next session", { skip, timeout: 600_000 }, async () => {
  const got = await runScenario(/** @type {string} */ (OPENCLAW), "honest");
  assert.equal(got.on_disk, true, JSON.stringify(got));
  assert.equal(got.origin, "agent", JSON.stringify(got));
  assert.equal(got.injected, true, JSON.stringify(got));
  assert.equal(got.waits, false, JSON.stringify(got));
});
