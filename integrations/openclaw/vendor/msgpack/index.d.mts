// The vendored codec's types for `tsc --checkJs` (npm run typecheck): the pinned package's own
// declarations (a devDependency, the same version as the files beside this one).
export * from "@msgpack/msgpack";
