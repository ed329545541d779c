// A client for memoryd's wire protocol (docs/protocol.md): 4-byte big-endian length, then
// one msgpack map. Requests are pipelined on one connection and matched by id; events
// (progress) come before the final answer of the same id.

import net from "node:net";
import { Decoder, Encoder } from "../vendor/msgpack/index.mjs";
import { socketPath as defaultSocketPath } from "./paths.js";

export const PROTOCOL_VERSION = 1;
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** The daemon's error codes, plus `timeout` for an answer that did not come in time. */
export const ErrorCode = Object.freeze({
  PROTOCOL_ERROR: "protocol_error",
  TOO_LARGE: "too_large",
  UNKNOWN_METHOD: "unknown_method",
  INVALID_PARAMS: "invalid_params",
  NOT_FOUND: "not_found",
  FORBIDDEN_PATH: "forbidden_path",
  UNKNOWN_WORKSPACE: "unknown_workspace",
  UNAVAILABLE: "unavailable",
  SHUTTING_DOWN: "shutting_down",
  DISK_FULL: "disk_full",
  INTERNAL: "internal",
  TIMEOUT: "timeout",
});

// The methods sent again, once, on a fresh connection when the connection dropped after the
// request went out: running them twice changes nothing more than once. docs/protocol.md's
// "resend" column (test/client.test.js reads it); any other method may have written, queued
// or stopped something (an append twice is two notes), and its caller gets the error instead.
export const SAFE_TO_RESEND = Object.freeze(
  new Set([
    "hello",
    "status",
    "workspace.add",
    "workspace.remove",
    "workspace.list",
    "search",
    "get",
    "reindex",
    "jobs.list",
    "fleet.status",
    "recall",
    "observe",
    "stats",
    "review.list",
    "sync.disable",
    "sync.status",
    "sync.now",
  ]),
);

export class MemorydError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} [data]
   */
  constructor(code, message, data) {
    super(message);
    this.name = "MemorydError";
    this.code = code;
    this.data = data ?? {};
  }

  /** True when the daemon could not be reached or did not answer (not a refused request). */
  get unreachable() {
    return this.code === ErrorCode.UNAVAILABLE || this.code === ErrorCode.TIMEOUT;
  }
}

/**
 * @typedef {{ resolve: (v: any) => void, reject: (e: Error) => void, timer?: NodeJS.Timeout,
 *   onEvent?: (event: string, data: any) => void, method: string, params: object,
 *   sentOn: net.Socket | null, resent: boolean }} Pending
 */

/** Encode one message as a complete frame. */
const encoder = new Encoder();
/** @param {object} msg */
export function frame(msg) {
  const body = encoder.encode(msg);
  const out = Buffer.allocUnsafe(4 + body.byteLength);
  out.writeUInt32BE(body.byteLength, 0);
  out.set(body, 4);
  return out;
}

export class MemorydClient {
  /**
   * @param {{ socket?: string, clientName?: string, timeoutMs?: number,
   *   maxFrameBytes?: number, env?: Record<string, string | undefined> }} [opts]
   */
  constructor(opts = {}) {
    this.socket = opts.socket || defaultSocketPath(opts.env ?? process.env);
    this.clientName = opts.clientName ?? "memoryd-openclaw";
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.maxFrameBytes = opts.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    /** @type {Map<number, Pending>} */
    this.pending = new Map();
    this.nextId = 1;
    /** @type {net.Socket | null} */
    this.conn = null;
    /** @type {Promise<net.Socket> | null} */
    this.connecting = null;
    /** @type {Buffer} */
    this.buffer = Buffer.alloc(0);
    this.decoder = new Decoder();
    this.closed = false;
  }

  /**
   * Send one request and wait for its answer (the wire `result`).
   * @param {string} method
   * @param {Record<string, unknown>} [params]
   * @param {{ timeoutMs?: number, onEvent?: (event: string, data: any) => void }} [opts]
   * @returns {Promise<any>}
   */
  call(method, params = {}, opts = {}) {
    if (this.closed) return Promise.reject(new MemorydError(ErrorCode.UNAVAILABLE, "client closed"));
    const clean = dropUndefined(params);
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      /** @type {Pending} */
      const entry = { resolve, reject, onEvent: opts.onEvent, method, params: clean, sentOn: null, resent: false };
      const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          this.pending.delete(id);
          this.refreshRef();
          reject(new MemorydError(ErrorCode.TIMEOUT, `memoryd did not answer ${method} within ${timeoutMs} ms`));
        }, timeoutMs);
        entry.timer.unref?.();
      }
      this.pending.set(id, entry);
      this.send(id, entry);
    });
  }

  /**
   * @param {number} id
   * @param {Pending} entry
   */
  send(id, entry) {
    this.connect().then(
      (conn) => {
        if (!this.pending.has(id)) return; // timed out meanwhile
        entry.sentOn = conn;
        this.refreshRef();
        conn.write(frame({ v: PROTOCOL_VERSION, id, method: entry.method, params: entry.params }));
      },
      (err) => this.settle(id, err),
    );
  }

  /** @returns {Promise<net.Socket>} */
  connect() {
    if (this.conn && !this.conn.destroyed) return Promise.resolve(this.conn);
    if (this.connecting) return this.connecting;
    this.connecting = new Promise((resolve, reject) => {
      const conn = net.createConnection({ path: this.socket });
      const onError = (/** @type {NodeJS.ErrnoException} */ err) => {
        this.connecting = null;
        reject(connectError(this.socket, err));
      };
      conn.once("error", onError);
      conn.once("connect", () => {
        conn.off("error", onError);
        this.connecting = null;
        this.conn = conn;
        this.buffer = Buffer.alloc(0);
        conn.on("data", (chunk) => this.onData(conn, chunk));
        conn.on("error", () => {}); // "close" follows and settles what is pending
        conn.on("close", () => this.onClose(conn));
        resolve(conn);
      });
    });
    return this.connecting;
  }

  /**
   * @param {net.Socket} conn
   * @param {Buffer} chunk
   */
  onData(conn, chunk) {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length >= 4) {
      const length = this.buffer.readUInt32BE(0);
      if (length > this.maxFrameBytes) {
        this.failConnection(conn, new MemorydError(ErrorCode.TOO_LARGE, `memoryd sent a frame of ${length} bytes (limit ${this.maxFrameBytes})`));
        return;
      }
      if (this.buffer.length < 4 + length) return;
      const body = this.buffer.subarray(4, 4 + length);
      this.buffer = this.buffer.subarray(4 + length);
      let msg;
      try {
        msg = this.decoder.decode(body);
      } catch (err) {
        this.failConnection(conn, new MemorydError(ErrorCode.PROTOCOL_ERROR, `malformed msgpack from memoryd: ${/** @type {Error} */ (err).message}`));
        return;
      }
      this.onMessage(conn, /** @type {any} */ (msg));
    }
  }

  /**
   * @param {net.Socket} conn
   * @param {any} msg
   */
  onMessage(conn, msg) {
    if (msg === null || typeof msg !== "object") return;
    const id = msg.id;
    if (typeof id !== "number") {
      // An answer without an id is about the connection (refused, bad frame): it ends.
      if (msg.ok === false) this.failConnection(conn, wireError(msg.error));
      return;
    }
    const entry = this.pending.get(id);
    if (!entry) return; // timed out: the late answer is dropped
    if (typeof msg.event === "string") {
      entry.onEvent?.(msg.event, msg.data);
      return;
    }
    if (msg.ok === true) this.settle(id, null, msg.result);
    else this.settle(id, wireError(msg.error));
  }

  /**
   * @param {number} id
   * @param {Error | null} err
   * @param {any} [result]
   */
  settle(id, err, result) {
    const entry = this.pending.get(id);
    if (!entry) return;
    this.pending.delete(id);
    if (entry.timer) clearTimeout(entry.timer);
    this.refreshRef();
    if (err) entry.reject(err);
    else entry.resolve(result);
  }

  /**
   * @param {net.Socket} conn
   * @param {Error} err
   */
  failConnection(conn, err) {
    for (const [id, entry] of [...this.pending]) if (entry.sentOn === conn) this.settle(id, err);
    conn.destroy();
  }

  /** @param {net.Socket} conn */
  onClose(conn) {
    if (this.conn === conn) this.conn = null;
    for (const [id, entry] of [...this.pending]) {
      if (entry.sentOn !== conn) continue;
      // The daemon closes idle connections; a request safe to resend that went out as it
      // closed is sent again once on a new connection.
      if (!entry.resent && SAFE_TO_RESEND.has(entry.method) && !this.closed) {
        entry.resent = true;
        entry.sentOn = null;
        this.send(id, entry);
      } else {
        this.settle(id, new MemorydError(ErrorCode.UNAVAILABLE, `memoryd closed the connection before answering ${entry.method}`));
      }
    }
  }

  /** Keep the process alive only while an answer is awaited. */
  refreshRef() {
    if (!this.conn) return;
    if (this.pending.size > 0) this.conn.ref();
    else this.conn.unref();
  }

  close() {
    this.closed = true;
    for (const id of [...this.pending.keys()]) this.settle(id, new MemorydError(ErrorCode.UNAVAILABLE, "client closed"));
    this.conn?.destroy();
    this.conn = null;
  }

  // Typed helpers: the params are the wire's (docs/protocol.md), the answer is its result.

  /** @param {Record<string, unknown>} params */
  search(params, opts = {}) {
    return this.call("search", params, opts);
  }
  /** @param {Record<string, unknown>} params */
  get(params, opts = {}) {
    return this.call("get", params, opts);
  }
  /** @param {Record<string, unknown>} params */
  append(params, opts = {}) {
    return this.call("append", params, opts);
  }
  /** @param {Record<string, unknown>} params */
  recall(params, opts = {}) {
    return this.call("recall", params, opts);
  }
  /** @param {Record<string, unknown>} [params] */
  status(params = {}, opts = {}) {
    return this.call("status", params, opts);
  }
  /** @param {Record<string, unknown>} params */
  flush(params, opts = {}) {
    return this.call("flush", params, opts);
  }
  hello(opts = {}) {
    return this.call("hello", { client: this.clientName, protocol: PROTOCOL_VERSION }, opts);
  }
}

/** @param {any} error */
function wireError(error) {
  const code = typeof error?.code === "string" ? error.code : ErrorCode.INTERNAL;
  const message = typeof error?.message === "string" ? error.message : "memoryd answered an error without a message";
  return new MemorydError(code, message, error?.data && typeof error.data === "object" ? error.data : undefined);
}

/**
 * @param {string} socket
 * @param {NodeJS.ErrnoException} err
 */
function connectError(socket, err) {
  const why = err.code === "ENOENT" ? "no socket there" : err.code === "ECONNREFUSED" ? "nothing listening" : err.message;
  return new MemorydError(
    ErrorCode.UNAVAILABLE,
    `memoryd is not reachable at ${socket} (${why}); start it with \`memoryd run\` (or at login: \`memoryd service install\`), or set the plugin's socket`,
    { socket, errno: err.code ?? null },
  );
}

/** @param {Record<string, unknown>} params */
function dropUndefined(params) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined) out[k] = v;
  return out;
}
