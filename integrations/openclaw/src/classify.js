// Which workspace memory files OpenClaw may put into an agent's context by itself (its
// bootstrap injects MEMORY.md and USER.md only when the memory runtime classifies them as
// the owner's or the agent's). The rule is memory-core's, by path: curated root files and
// memory/**.md are the agent's, dreaming output is the system's, anything else (outside the
// workspace, a link leading out of it) untrusted.

import fs from "node:fs/promises";
import path from "node:path";

const CURATED_ROOT = new Set(["MEMORY.md", "memory.md", "USER.md"]);
const PER_USER = /^users\/[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\/USER\.md$/;

/**
 * The origin class of one workspace-relative path, already canonical (no `..`, `/`-separated).
 * @param {string} rel
 * @returns {"agent" | "system" | "untrusted"}
 */
export function originOf(rel) {
  const segments = rel.split("/");
  if ((segments.length === 1 && /^dreams\.md$/i.test(segments[0])) || (segments[0] === "memory" && (segments[1] === "dreaming" || segments[1] === ".dreams"))) {
    return "system";
  }
  const curated = segments.length === 1 && CURATED_ROOT.has(segments[0]);
  if (curated || PER_USER.test(rel) || (segments[0] === "memory" && segments.length > 1 && segments.at(-1)?.endsWith(".md"))) return "agent";
  return "untrusted";
}

/** @param {string | undefined} p */
function canonical(p) {
  if (!p || p === "." || p === ".." || p.startsWith("../") || path.posix.isAbsolute(p) || path.win32.isAbsolute(p) || p.includes("\\") || p.includes("\0")) return null;
  return path.posix.normalize(p) === p ? p : null;
}

/**
 * OpenClaw's classifyWorkspaceMemoryPaths: read sources already resolved by OpenClaw are
 * taken as given; otherwise the file's real path must lie inside the real workspace.
 * @param {{ workspaceDir: string, relativePaths: string[],
 *   readSources?: readonly { relativePath: string, canonicalRelativePath?: string }[] }} params
 */
export async function classifyWorkspaceMemoryPaths({ workspaceDir, relativePaths, readSources }) {
  const root = await fs.realpath(workspaceDir).catch(() => null);
  return Promise.all(
    relativePaths.map(async (relativePath) => {
      let rel = null;
      if (readSources !== undefined) {
        rel = canonical(readSources.find((s) => s.relativePath === relativePath)?.canonicalRelativePath);
      } else if (root) {
        const real = await fs.realpath(path.resolve(workspaceDir, relativePath)).catch(() => null);
        const inside = real && real.startsWith(root + path.sep) ? path.relative(root, real).split(path.sep).join("/") : null;
        rel = canonical(inside ?? undefined);
      }
      return { relativePath, originClass: rel ? originOf(rel) : "untrusted" };
    }),
  );
}
