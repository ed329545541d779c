// Where memoryd's socket is, found the way memctl finds it (the Python client's paths module):
// an explicit path, then MEMORYD_SOCKET, then MEMORYD_HOME/run, then the login session's
// runtime directory when it is a private folder of ours, else the state directory's own.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const APP = "memoryd";
const SOCKET_NAME = "memoryd.sock";
const LOGIN_RUNTIME_BASE = "/run/user"; // systemd-logind's per-user runtime directories

/**
 * The socket path in force.
 * @param {Record<string, string | undefined>} [env]
 * @param {string} [override] the plugin's `socket` setting
 * @param {{ loginBase?: string, platform?: string, uid?: number, home?: string }} [opts]
 * @returns {string}
 */
export function socketPath(env = process.env, override, opts = {}) {
  const home = opts.home ?? os.homedir();
  if (override) return expandUser(override, home);
  if (env.MEMORYD_SOCKET) return expandUser(env.MEMORYD_SOCKET, home);
  if (env.MEMORYD_HOME) return path.join(expandUser(env.MEMORYD_HOME, home), "run", SOCKET_NAME);
  const platform = opts.platform ?? process.platform;
  if (platform === "darwin") {
    // platformdirs' user_runtime_dir on macOS
    return path.join(home, "Library", "Caches", "TemporaryItems", APP, SOCKET_NAME);
  }
  const uid = opts.uid ?? process.geteuid?.() ?? 0;
  const loginBase = opts.loginBase ?? LOGIN_RUNTIME_BASE;
  for (const base of [env.XDG_RUNTIME_DIR, path.join(loginBase, String(uid))]) {
    if (base && privateDirProblem(base, uid) === null) return path.join(base, APP, SOCKET_NAME);
  }
  return path.join(stateDir(env, home), "run", SOCKET_NAME);
}

/**
 * platformdirs' user_state_dir("memoryd") on Linux.
 * @param {Record<string, string | undefined>} env
 * @param {string} home
 */
function stateDir(env, home) {
  const base = env.XDG_STATE_HOME?.trim() ? env.XDG_STATE_HOME : path.join(home, ".local", "state");
  return path.join(base, APP);
}

/**
 * Why `dir` is not a directory of ours that only we can enter, or null when it is.
 * @param {string} dir
 * @param {number} uid
 * @returns {string | null}
 */
export function privateDirProblem(dir, uid) {
  let st;
  try {
    st = fs.lstatSync(dir);
  } catch (err) {
    return `${dir}: ${/** @type {Error} */ (err).message}`;
  }
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (st.uid !== uid) return `${dir} is owned by uid ${st.uid}, not by uid ${uid}`;
  if (st.mode & 0o077) return `${dir} has mode ${(st.mode & 0o777).toString(8)}, not 0700`;
  return null;
}

/**
 * @param {string} p
 * @param {string} home
 */
function expandUser(p, home) {
  if (p === "~") return home;
  if (p.startsWith("~/")) return path.join(home, p.slice(2));
  return p;
}
