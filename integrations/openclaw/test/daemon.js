// A real memoryd for the tests: `python -m memoryd.cli run` from the repository's venv
// (or PLUGIN_TEST_PYTHON) with its own MEMORYD_HOME under /tmp (socket paths must stay short),
// keyword search only (MEMORYD_EMBEDDING_PROVIDER=none) so it starts in a second.

import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export function pythonForMemoryd() {
  if (process.env.PLUGIN_TEST_PYTHON) return process.env.PLUGIN_TEST_PYTHON;
  const venv = path.join(REPO, ".venv", "bin", "python");
  if (fs.existsSync(venv)) return venv;
  throw new Error("no memoryd to run: create the repository's .venv (see README) or set PLUGIN_TEST_PYTHON");
}

/** A fresh folder under /tmp. @param {string} [prefix] */
export function tempDir(prefix = "mdoc") {
  return fs.mkdtempSync(path.join("/tmp", prefix));
}

/**
 * @param {string} dir
 * @param {Record<string, string>} files relative path -> text
 */
export function writeFiles(dir, files) {
  for (const [rel, text] of Object.entries(files)) {
    const p = path.join(dir, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
  }
}

/** memctl from the repository's venv (beside the python the daemon runs from). */
export function memctl() {
  return path.join(path.dirname(pythonForMemoryd()), "memctl");
}

/**
 * memctl as a user installs it: memoryd-client's wheel in a fresh venv under /tmp, nothing
 * of the checkout on any path (tests/client_wheel.py). Its OpenClaw plugin is the wheel's.
 * @returns {Promise<{ memctl: string, remove: () => void }>}
 */
export async function memctlFromWheel() {
  const dir = tempDir("mdwheel");
  const made = await run(pythonForMemoryd(), [path.join(REPO, "tests", "client_wheel.py"), dir], {}, dir);
  if (made.code !== 0) throw new Error(`could not install the client's wheel: ${made.err}`);
  return {
    memctl: path.join(made.out.trim(), "memctl"),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Run a command to its end in `cwd`, with `extra` added to the environment.
 * @param {string} command
 * @param {string[]} args
 * @param {Record<string, string>} extra
 * @param {string} cwd
 * @returns {Promise<{ code: number | null, out: string, err: string }>}
 */
export function run(command, args, extra, cwd) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, ...extra }, cwd });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

/**
 * Rows of OpenClaw's store, read-only as memoryd reads it.
 * @param {string} file @param {string} sql @param {...string} args
 * @returns {Promise<Record<string, unknown>[]>}
 */
export async function queryStore(file, sql, ...args) {
  const { DatabaseSync } = await import("node:sqlite"); // Node 24, as openclaw needs
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return /** @type {Record<string, unknown>[]} */ (db.prepare(sql).all(...args));
  } finally {
    db.close();
  }
}

/**
 * Start memoryd and wait until its socket accepts.
 * @param {{ home?: string, config?: string, env?: Record<string, string> }} [opts]
 */
export async function startDaemon(opts = {}) {
  const home = opts.home ?? tempDir("mdh");
  if (opts.config !== undefined) fs.writeFileSync(path.join(home, "config.toml"), opts.config);
  /** @type {Record<string, string | undefined>} */
  const env = { ...process.env, MEMORYD_HOME: home, MEMORYD_EMBEDDING_PROVIDER: "none", ...(opts.env ?? {}) };
  delete env.MEMORYD_SOCKET;
  delete env.MEMORYD_CONFIG;
  const logPath = path.join(home, "daemon.log");
  const log = fs.openSync(logPath, "w");
  const child = spawn(pythonForMemoryd(), ["-m", "memoryd.cli", "run"], { env, stdio: ["ignore", "ignore", log] });
  const socket = path.join(home, "run", "memoryd.sock");
  const deadline = Date.now() + 30_000;
  while (!(await accepts(socket))) {
    if (child.exitCode !== null) throw new Error(`memoryd exited: ${fs.readFileSync(logPath, "utf8")}`);
    if (Date.now() > deadline) throw new Error(`memoryd did not start: ${fs.readFileSync(logPath, "utf8")}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    home,
    socket,
    child,
    logPath,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      fs.closeSync(log);
    },
    remove() {
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}

/** @param {string} socket */
function accepts(socket) {
  return new Promise((resolve) => {
    const c = net.createConnection({ path: socket });
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });
}
