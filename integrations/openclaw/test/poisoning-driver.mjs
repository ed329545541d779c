// bench/poisoning.py's OpenClaw side: both scenarios of test/poisoning.js with the openclaw
// of $OPENCLAW_BIN; prints one JSON line: the outcomes.

import { runScenario } from "./poisoning.js";

const openclaw = process.env.OPENCLAW_BIN;
if (!openclaw) throw new Error("set OPENCLAW_BIN to the openclaw executable");
const rows = [await runScenario(openclaw, "web page"), await runScenario(openclaw, "honest")];
process.stdout.write(`${JSON.stringify(rows)}\n`);
