// The plugin's settings (plugins.entries.memoryd.config), with their defaults.

/**
 * @typedef {{
 *   socket?: string,
 *   workspace?: string,
 *   timeoutMs: number,
 *   recall: { enabled: boolean, budgetTokens: number, minScore?: number, timeoutMs: number },
 *   flush: { enabled: boolean },
 *   getLines: number,
 * }} Settings
 */

/** @type {Settings} */
export const DEFAULTS = Object.freeze({
  timeoutMs: 10_000,
  // A reply never waits longer than this for recall: a slow or absent daemon adds nothing.
  recall: Object.freeze({ enabled: true, budgetTokens: 600, timeoutMs: 1_500 }),
  flush: Object.freeze({ enabled: true }),
  getLines: 200, // memory_get without `lines` reads a bounded excerpt, as memory-core does
});

/**
 * @param {unknown} raw
 * @returns {Settings}
 */
export function resolveSettings(raw) {
  const c = raw && typeof raw === "object" ? /** @type {Record<string, any>} */ (raw) : {};
  const recall = c.recall && typeof c.recall === "object" ? c.recall : {};
  const flush = c.flush && typeof c.flush === "object" ? c.flush : {};
  return {
    socket: nonEmpty(c.socket),
    workspace: nonEmpty(c.workspace),
    timeoutMs: positiveInt(c.timeoutMs) ?? DEFAULTS.timeoutMs,
    recall: {
      enabled: recall.enabled !== false,
      budgetTokens: positiveInt(recall.budgetTokens) ?? DEFAULTS.recall.budgetTokens,
      minScore: typeof recall.minScore === "number" ? recall.minScore : undefined,
      timeoutMs: positiveInt(recall.timeoutMs) ?? DEFAULTS.recall.timeoutMs,
    },
    flush: { enabled: flush.enabled !== false },
    getLines: positiveInt(c.getLines) ?? DEFAULTS.getLines,
  };
}

/** @param {unknown} v */
function nonEmpty(v) {
  return typeof v === "string" && v.trim() ? v.trim() : undefined;
}

/** @param {unknown} v */
function positiveInt(v) {
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : undefined;
}
