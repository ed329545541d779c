import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { socketPath } from "../src/paths.js";
import { tempDir } from "./daemon.js";

const opts = { home: "/home/u", platform: "linux", uid: process.geteuid?.() ?? 0, loginBase: "/nonexistent-login-base" };

test("the plugin's socket setting beats MEMORYD_SOCKET beats MEMORYD_HOME", () => {
  const env = { MEMORYD_SOCKET: "/s/a.sock", MEMORYD_HOME: "/h" };
  assert.equal(socketPath(env, "~/x.sock", opts), "/home/u/x.sock");
  assert.equal(socketPath(env, undefined, opts), "/s/a.sock");
  assert.equal(socketPath({ MEMORYD_HOME: "~/mh" }, undefined, opts), "/home/u/mh/run/memoryd.sock");
});

test("a private XDG_RUNTIME_DIR holds the socket; one that is not private is passed over", () => {
  const dir = tempDir("mdrt");
  try {
    fs.chmodSync(dir, 0o700);
    assert.equal(socketPath({ XDG_RUNTIME_DIR: dir }, undefined, opts), path.join(dir, "memoryd", "memoryd.sock"));
    fs.chmodSync(dir, 0o755);
    assert.equal(socketPath({ XDG_RUNTIME_DIR: dir }, undefined, opts), "/home/u/.local/state/memoryd/run/memoryd.sock");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the login session's /run/user/UID comes next, then the state directory (XDG_STATE_HOME honoured)", () => {
  const base = tempDir("mdlb");
  try {
    const mine = path.join(base, String(opts.uid));
    fs.mkdirSync(mine, { mode: 0o700 });
    assert.equal(socketPath({}, undefined, { ...opts, loginBase: base }), path.join(mine, "memoryd", "memoryd.sock"));
    assert.equal(socketPath({ XDG_STATE_HOME: "/st" }, undefined, opts), "/st/memoryd/run/memoryd.sock");
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});

test("macOS: platformdirs' runtime folder", () => {
  assert.equal(
    socketPath({}, undefined, { ...opts, platform: "darwin" }),
    "/home/u/Library/Caches/TemporaryItems/memoryd/memoryd.sock",
  );
});

test("memctl and the plugin find the same socket in the same environment", async () => {
  const { execFileSync } = await import("node:child_process");
  const { pythonForMemoryd } = await import("./daemon.js");
  const rt = tempDir("mdeq");
  fs.chmodSync(rt, 0o700);
  try {
    for (const env of [{ XDG_RUNTIME_DIR: rt }, { MEMORYD_HOME: "/tmp/mh" }, { MEMORYD_SOCKET: "/tmp/s.sock" }, {}]) {
      const full = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/", ...env };
      const py = execFileSync(pythonForMemoryd(), ["-c", "from memoryd_client.paths import socket_path; print(socket_path())"], {
        env: full,
      })
        .toString()
        .trim();
      assert.equal(socketPath(full), py, JSON.stringify(env));
    }
  } finally {
    fs.rmSync(rt, { recursive: true, force: true });
  }
});
