// memoryd as OpenClaw's memory plugin (kind "memory": it owns plugins.slots.memory).

import { PLUGIN_ID, registerMemoryd } from "./src/plugin.js";

export { MemorydClient, MemorydError, ErrorCode } from "./src/client.js";
export { socketPath } from "./src/paths.js";

export default {
  id: PLUGIN_ID,
  name: "memoryd",
  description: "memory_search, memory_get, recall and the pre-compaction flush answered by the memoryd daemon",
  kind: "memory",
  /** @param {any} api */
  register(api) {
    registerMemoryd(api);
  },
};
