// The project key: the same rule and the same answers as the Python client's project_key.

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { normalizeRemote, projectKey } from "../src/project.js";
import { pythonForMemoryd, tempDir, writeFiles } from "./daemon.js";

test("remotes normalise to host/owner/repo whatever their form", () => {
  for (const url of [
    "git@github.com:Acme/App.git",
    "https://github.com/acme/app",
    "https://user@GitHub.com:443/acme/app.git/",
    "ssh://git@github.com/acme/app.git",
  ]) {
    assert.equal(normalizeRemote(url), "github.com/acme/app", url);
  }
  assert.equal(normalizeRemote("not a url"), null);
  assert.equal(normalizeRemote("https://github.com/"), null);
});

test("a repository is keyed by its origin, a worktree by the shared one, no origin by its root, elsewhere none", async () => {
  const top = fs.realpathSync(tempDir("mdprj"));
  try {
    writeFiles(top, {
      "app/.git/config": '[core]\n\tbare = false\n[remote "upstream"]\n\turl = git@example.org:x/y.git\n[remote "origin"]\n\turl = git@github.com:Acme/App.git\n',
      "app/src/deep/file.txt": "x\n",
      "app/.git/worktrees/wt/commondir": "../..\n",
      "wt/.git": `gitdir: ${path.join(top, "app/.git/worktrees/wt")}\n`,
      "local/.git/config": "[core]\n\tbare = false\n",
      "plain/notes.txt": "x\n",
    });
    const dirs = {
      deep: path.join(top, "app/src/deep"),
      worktree: path.join(top, "wt"),
      local: path.join(top, "local"),
      plain: path.join(top, "plain"),
    };
    assert.equal(projectKey(dirs.deep), "github.com/acme/app");
    assert.equal(projectKey(dirs.worktree), "github.com/acme/app");
    assert.equal(projectKey(dirs.local), dirs.local);
    const plain = projectKey(dirs.plain);
    assert.equal(projectKey(undefined), null);

    const { execFileSync } = await import("node:child_process");
    const script = "import json, sys\nfrom memoryd_client.agents.project import project_key\nprint(json.dumps([project_key(d) for d in sys.argv[1:]]))";
    const py = JSON.parse(execFileSync(pythonForMemoryd(), ["-c", script, ...Object.values(dirs)], { encoding: "utf8" }));
    assert.deepEqual([projectKey(dirs.deep), projectKey(dirs.worktree), projectKey(dirs.local), plain], py);
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});
