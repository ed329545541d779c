// The project an agent's working directory belongs to, as memoryd's `project` key (the same
// rule as the Python client's agents project module): the repository's `origin`
// remote normalised to host/owner/repo (`git@github.com:Acme/App.git` and
// `https://github.com/acme/app` are both `github.com/acme/app`), so clones and worktrees share
// it; a repository without an origin is keyed by its root's path; outside a repository there
// is none. Read from .git/config (a worktree's .git file leads to the shared config), never
// by running git: recall asks before every turn. Cached per directory for the process.

import fs from "node:fs";
import path from "node:path";

const SCP = /^(?:[^@/]+@)?(?<host>[^:/]+):(?<path>[^/].*)$/; // git@host:owner/repo
const URL_RE = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]+@)?(?<host>[^/:]+)(?::\d+)?\/(?<path>.*)$/i;
const MAX_DEPTH = 64;
const CACHE_MAX = 128;

/** @type {Map<string, string | null>} */
const cache = new Map();

/**
 * host/owner/repo of a git remote URL (lower-cased, no user, port, `.git`), or null.
 * @param {string} url
 */
export function normalizeRemote(url) {
  const u = url.trim();
  const m = URL_RE.exec(u) ?? SCP.exec(u);
  if (!m?.groups) return null;
  let p = stripSlashes(m.groups.path);
  if (p.endsWith(".git")) p = p.slice(0, -4);
  p = stripSlashes(p);
  if (!p) return null;
  return `${m.groups.host}/${p}`.toLowerCase();
}

/**
 * The project key of a directory (null: not in a repository, or no directory).
 * @param {string | undefined | null} dir
 */
export function projectKey(dir) {
  if (!dir) return null;
  let real;
  try {
    real = fs.realpathSync(dir);
  } catch {
    real = path.resolve(dir);
  }
  if (cache.has(real)) return cache.get(real) ?? null;
  const key = keyOf(real);
  if (cache.size >= CACHE_MAX) cache.delete(/** @type {string} */ (cache.keys().next().value));
  cache.set(real, key);
  return key;
}

/** @param {string} directory */
function keyOf(directory) {
  let dir = directory;
  for (let i = 0; i < MAX_DEPTH; i++) {
    if (fs.existsSync(path.join(dir, ".git"))) {
      const gitDir = gitDirOf(dir);
      if (gitDir === null) return dir;
      return originOf(path.join(commonDir(gitDir), "config")) ?? dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
  return null;
}

/**
 * The git folder of a repository whose top is `root`: `.git`, or the folder a worktree's
 * (or submodule's) `.git` file names.
 * @param {string} root
 */
function gitDirOf(root) {
  const dot = path.join(root, ".git");
  try {
    if (fs.statSync(dot).isDirectory()) return dot;
    const first = fs.readFileSync(dot, "utf8").split(/\r?\n/)[0] ?? "";
    if (!first.startsWith("gitdir:")) return null;
    const target = first.slice("gitdir:".length).trim();
    return path.isAbsolute(target) ? target : path.resolve(root, target);
  } catch {
    return null;
  }
}

/** Where the config lives: a worktree's git folder names the shared one in `commondir`. @param {string} gitDir */
function commonDir(gitDir) {
  try {
    const common = fs.readFileSync(path.join(gitDir, "commondir"), "utf8").trim();
    return path.isAbsolute(common) ? common : path.resolve(gitDir, common);
  } catch {
    return gitDir;
  }
}

/**
 * The normalised url of `[remote "origin"]` in a git config file, or null.
 * @param {string} configPath
 */
function originOf(configPath) {
  let text;
  try {
    text = fs.readFileSync(configPath, "utf8");
  } catch {
    return null;
  }
  let inOrigin = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith("[")) {
      inOrigin = /^\[\s*remote\s+"origin"\s*\]$/.test(line);
      continue;
    }
    if (!inOrigin) continue;
    const m = /^url\s*[=:]\s*(.*)$/i.exec(line);
    if (m) return m[1] ? normalizeRemote(m[1]) : null;
  }
  return null;
}

/** @param {string} s */
function stripSlashes(s) {
  return s.replace(/^\/+|\/+$/g, "");
}
