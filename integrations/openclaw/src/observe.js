// What a session reads, told to memoryd (its `observe` method; docs/provenance.md, "Trust
// from the trajectory"). The plugin sees every turn of every session: the user's prompt (the
// turn starts clean) and each tool call before it runs (a web fetch or search, a browser, a
// shell command that downloads, a file read from outside the workspace: memoryd classifies
// the tool, its command and its path). A note the session then writes takes the least
// trusted origin it read since the user's last message, whatever the model declares.

import path from "node:path";

/** memoryd's own tools and OpenClaw's Tool Search: they read nothing from outside. */
const OWN = new Set(["memory_search", "memory_get", "tool_search_code"]);
/** File writes are the write path's (writes.js), not reads. */
export const WRITE_TOOLS = new Set(["write", "edit", "apply_patch"]);

/**
 * The tool a call runs and its params; OpenClaw's Tool Search runs a tool by id (`tool_call`).
 * @param {any} event before_tool_call's event
 * @returns {{ name: string, params: Record<string, any> }}
 */
export function toolCallOf(event) {
  const params = event?.params && typeof event.params === "object" ? event.params : {};
  if (event?.toolName === "tool_call" && typeof params.id === "string") {
    const inner = params.args && typeof params.args === "object" ? params.args : {};
    return { name: params.id.replace(/^openclaw:[^:]+:/, ""), params: inner };
  }
  return { name: typeof event?.toolName === "string" ? event.toolName : "", params };
}

/**
 * `observe`'s params for a tool call that may bring outside content in, or null (one of
 * memoryd's own, a write, or no session to name).
 * @param {{ name: string, params: Record<string, any> }} call
 * @param {{ sessionId?: string, workspace?: string, workspaceDir?: string, kind?: string }} where
 */
export function readOf(call, where) {
  if (!where.sessionId || !call.name || OWN.has(call.name) || WRITE_TOOLS.has(call.name)) return null;
  const p = call.params;
  const file = [p.path, p.file_path, p.filePath].find((v) => typeof v === "string");
  const what = [p.url, p.query, p.targetUrl].find((v) => typeof v === "string");
  return {
    session_id: where.sessionId,
    event: "read",
    tool: call.name,
    ...(typeof p.command === "string" ? { command: p.command.slice(0, 2000) } : {}),
    ...(file ? { path: where.workspaceDir && !path.isAbsolute(file) ? path.join(where.workspaceDir, file) : file } : {}),
    ...(where.workspaceDir ? { cwd: where.workspaceDir } : {}),
    ...(what ? { what: `${call.name} ${what}`.slice(0, 200) } : {}),
    ...(where.workspace ? { workspace: where.workspace } : {}),
    ...(where.kind ? { session_kind: where.kind } : {}),
  };
}
