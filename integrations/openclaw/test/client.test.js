import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { Decoder } from "../vendor/msgpack/index.mjs";
import { fileURLToPath } from "node:url";
import { ErrorCode, MemorydClient, MemorydError, SAFE_TO_RESEND, frame } from "../src/client.js";
import { startDaemon, tempDir, writeFiles } from "./daemon.js";

describe("against a real memoryd", () => {
  /** @type {Awaited<ReturnType<typeof startDaemon>>} */
  let daemon;
  /** @type {MemorydClient} */
  let client;
  let workspace = "";

  before(async () => {
    daemon = await startDaemon();
    workspace = tempDir("mdws");
    writeFiles(workspace, { "MEMORY.md": "# Memory\n\n- The billing service is owned by Priya.\n" });
    client = new MemorydClient({ socket: daemon.socket });
    await client.call("workspace.add", { path: workspace, name: "oc" });
  });
  after(async () => {
    client.close();
    await daemon.stop();
    daemon.remove();
    fs.rmSync(workspace, { recursive: true, force: true });
  });

  test("hello names the server and the protocol", async () => {
    const hello = await client.hello();
    assert.equal(hello.server, "memoryd");
    assert.equal(hello.protocol, 1);
  });

  test("an appended line is found by the next search (read-your-writes)", async () => {
    const at = await client.append({ text: "- The deploy key rotates every 藍鯨 Tuesday.", workspace: "oc" });
    assert.match(at.path, /^memory\/\d{4}-\d{2}-\d{2}\.md$/);
    const found = await client.search({ query: "藍鯨", workspace: "oc" });
    assert.ok(found.results.some((/** @type {any} */ r) => r.path === at.path && r.snippet.includes("藍鯨")), JSON.stringify(found));
  });

  test("pipelined requests each get their own answer", async () => {
    const queries = ["billing", "Priya", "deploy", "nothing-like-this", "owned"];
    const answers = await Promise.all(queries.map((q) => client.search({ query: q, workspace: "oc" })));
    assert.equal(answers.length, queries.length);
    assert.ok(answers[1].results.some((/** @type {any} */ r) => r.snippet.includes("Priya")));
    assert.equal(answers[3].results.length, 0);
  });

  test("a refused request is a MemorydError with the wire code and data; the connection stays usable", async () => {
    await assert.rejects(client.search({ query: "x", workspace: "oc", max_results: 0 }), (/** @type {any} */ err) => {
      assert.ok(err instanceof MemorydError);
      assert.equal(err.code, ErrorCode.INVALID_PARAMS);
      assert.equal(err.data.param, "max_results");
      return true;
    });
    await assert.rejects(client.call("no.such.method"), { code: ErrorCode.UNKNOWN_METHOD });
    await assert.rejects(client.get({ path: "../etc/passwd", workspace: "oc" }), (/** @type {any} */ err) =>
      [ErrorCode.FORBIDDEN_PATH, ErrorCode.INVALID_PARAMS].includes(err.code),
    );
    assert.equal((await client.get({ path: "MEMORY.md", workspace: "oc" })).total_lines, 3);
  });

  test("a workspace memoryd does not know is unknown_workspace", async () => {
    await assert.rejects(client.search({ query: "x", workspace: "/nowhere/at/all" }), { code: ErrorCode.UNKNOWN_WORKSPACE });
  });

  test("a stopped daemon is `unavailable`; a restarted one is reached again by the same client", async () => {
    const own = await startDaemon();
    const c = new MemorydClient({ socket: own.socket });
    try {
      assert.equal((await c.hello()).server, "memoryd");
      await own.stop();
      const err = await c.hello().catch((e) => e);
      assert.ok(err instanceof MemorydError && err.unreachable, String(err));
      assert.match(err.message, /not reachable at .*memoryd\.sock|closed the connection/);
      const again = await startDaemon({ home: own.home });
      try {
        assert.equal((await c.hello()).server, "memoryd");
      } finally {
        await again.stop();
      }
    } finally {
      c.close();
      own.remove();
    }
  });
});

describe("at the socket boundary", () => {
  test("no socket: unavailable, naming the path and how to start memoryd", async () => {
    const c = new MemorydClient({ socket: "/tmp/no-such-dir-memoryd/memoryd.sock" });
    const err = await c.hello().catch((e) => e);
    assert.equal(err.code, ErrorCode.UNAVAILABLE);
    assert.match(err.message, /no-such-dir-memoryd\/memoryd\.sock \(no socket there\).*`memoryd run`/);
    c.close();
  });

  test("a daemon that does not answer: timeout after the given time, and the late answer is dropped", async () => {
    const dir = tempDir("mdsl");
    const sock = path.join(dir, "s.sock");
    /** @type {net.Socket[]} */
    const conns = [];
    const server = net.createServer((c) => conns.push(c));
    await new Promise((r) => server.listen(sock, () => r(null)));
    const c = new MemorydClient({ socket: sock });
    try {
      const started = Date.now();
      await assert.rejects(c.call("recall", { query: "q" }, { timeoutMs: 150 }), { code: ErrorCode.TIMEOUT });
      assert.ok(Date.now() - started < 2000);
      conns[0].write(frame({ id: 1, ok: true, result: {} })); // too late: nothing to settle
      assert.equal(c.pending.size, 0);
    } finally {
      c.close();
      for (const x of conns) x.destroy();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("frames split across reads and events before the answer are put back together", async () => {
    const dir = tempDir("mdsp");
    const sock = path.join(dir, "s.sock");
    const server = net.createServer((conn) => {
      let buf = Buffer.alloc(0);
      conn.on("data", async (chunk) => {
        buf = Buffer.concat([buf, chunk]);
        if (buf.length < 4 || buf.length < 4 + buf.readUInt32BE(0)) return;
        const req = /** @type {any} */ (new Decoder().decode(buf.subarray(4, 4 + buf.readUInt32BE(0))));
        const out = Buffer.concat([
          frame({ id: req.id, event: "progress", data: { phase: "scan", done: 1, total: 2 } }),
          frame({ id: req.id, ok: true, result: { echo: req.method, text: "多字节".repeat(50) } }),
        ]);
        for (let i = 0; i < out.length; i += 7) {
          conn.write(out.subarray(i, i + 7));
          await new Promise((r) => setImmediate(r));
        }
      });
    });
    await new Promise((r) => server.listen(sock, () => r(null)));
    const c = new MemorydClient({ socket: sock });
    try {
      /** @type {any[]} */
      const events = [];
      const result = await c.call("reindex", {}, { onEvent: (name, data) => events.push([name, data]) });
      assert.equal(result.echo, "reindex");
      assert.equal(result.text, "多字节".repeat(50));
      assert.deepEqual(events, [["progress", { phase: "scan", done: 1, total: 2 }]]);
    } finally {
      c.close();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an oversize frame header fails the requests on that connection with too_large", async () => {
    const dir = tempDir("mdbig");
    const sock = path.join(dir, "s.sock");
    const server = net.createServer((conn) => {
      conn.once("data", () => {
        const header = Buffer.alloc(4);
        header.writeUInt32BE(1024);
        conn.write(header);
      });
    });
    await new Promise((r) => server.listen(sock, () => r(null)));
    const c = new MemorydClient({ socket: sock, maxFrameBytes: 100 });
    try {
      await assert.rejects(c.hello(), { code: ErrorCode.TOO_LARGE });
    } finally {
      c.close();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a dropped request is sent again exactly when docs/protocol.md's resend column says yes", async () => {
    const documented = documentedResend();
    assert.ok(["append", "forget", "import", "export", "flush", "search"].every((m) => documented.has(m)));
    const safe = [...documented].filter(([, yes]) => yes).map(([m]) => m);
    assert.deepEqual([...SAFE_TO_RESEND].sort(), safe.sort());
    const dir = tempDir("mdrs");
    const sock = path.join(dir, "s.sock");
    /** @type {Map<string, number>} */
    const seen = new Map();
    const server = net.createServer((conn) => {
      let buf = Buffer.alloc(0);
      conn.on("data", (chunk) => {
        buf = Buffer.concat([buf, chunk]);
        while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
          const req = /** @type {any} */ (new Decoder().decode(buf.subarray(4, 4 + buf.readUInt32BE(0))));
          buf = buf.subarray(4 + buf.readUInt32BE(0));
          const n = (seen.get(req.method) ?? 0) + 1;
          seen.set(req.method, n);
          if (n === 1) return void conn.destroy(); // dropped after the request went out
          conn.write(frame({ id: req.id, ok: true, result: { method: req.method } }));
        }
      });
    });
    await new Promise((r) => server.listen(sock, () => r(null)));
    const c = new MemorydClient({ socket: sock, timeoutMs: 5000 });
    try {
      for (const [method, yes] of documented) {
        const answer = await c.call(method, {}).catch((e) => e);
        if (yes) assert.deepEqual(answer, { method }, method);
        else assert.ok(answer instanceof MemorydError && answer.code === ErrorCode.UNAVAILABLE, `${method}: ${answer}`);
        assert.equal(seen.get(method), yes ? 2 : 1, method);
      }
    } finally {
      c.close();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** docs/protocol.md's methods table: method -> safe to resend. */
function documentedResend() {
  const doc = fs.readFileSync(fileURLToPath(new URL("../../../docs/protocol.md", import.meta.url)), "utf8");
  const table = doc.split("| method | params | result | resend |")[1].split("\n\n")[0];
  /** @type {Map<string, boolean>} */
  const rows = new Map();
  for (const line of table.split("\n").slice(2)) {
    const m = /^\| `([a-z_.]+)` \|.*\| (yes|no) \|$/.exec(line);
    assert.ok(m, `a methods row without a yes/no resend cell: ${line.slice(0, 80)}`);
    rows.set(m[1], m[2] === "yes");
  }
  return rows;
}
