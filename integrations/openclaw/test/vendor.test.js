// The plugin installs with no npm dependency (`openclaw plugins install <folder>` copies the
// folder and installs nothing): its msgpack codec is vendored, byte for byte the pinned
// package's dist.esm (a devDependency), and nothing it ships imports a bare package.

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));

/** @param {string} dir @returns {string[]} relative paths of .js/.mjs files */
function sources(dir) {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.m?js$/.test(e.name))
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

test("every file package.json ships is there", () => {
  for (const entry of pkg.files) assert.ok(fs.existsSync(path.join(ROOT, entry)), `package.json lists ${entry}, which does not exist`);
});

test("the plugin has no runtime npm dependency", () => {
  assert.deepEqual(pkg.dependencies ?? {}, {});
  assert.equal(pkg.devDependencies["@msgpack/msgpack"], "3.1.3");
});

test("the vendored msgpack is the pinned package's dist.esm, unchanged", () => {
  const upstream = path.join(ROOT, "node_modules", "@msgpack", "msgpack");
  const version = JSON.parse(fs.readFileSync(path.join(upstream, "package.json"), "utf8")).version;
  assert.equal(version, pkg.devDependencies["@msgpack/msgpack"]);
  const vendored = path.join(ROOT, "vendor", "msgpack");
  const dist = path.join(upstream, "dist.esm");
  assert.deepEqual(sources(vendored), sources(dist));
  for (const rel of sources(dist)) {
    assert.ok(fs.readFileSync(path.join(vendored, rel)).equals(fs.readFileSync(path.join(dist, rel))), rel);
  }
});

test("what the plugin ships imports only node: modules and its own files", () => {
  for (const dir of ["src", "vendor"]) {
    for (const rel of sources(path.join(ROOT, dir))) {
      const text = fs.readFileSync(path.join(ROOT, dir, rel), "utf8");
      for (const [, spec] of text.matchAll(/(?:^|\n)\s*(?:import|export)[^"';]*?from\s+["']([^"']+)["']/g)) {
        assert.ok(spec.startsWith("node:") || spec.startsWith("."), `${dir}/${rel} imports ${spec}`);
      }
    }
  }
  assert.ok(pkg.files.includes("vendor/"));
});
