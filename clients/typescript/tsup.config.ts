import { defineConfig } from "tsup";

export default defineConfig([
  {
    // The package: ESM and CommonJS builds of one source, with type declarations for both.
    entry: { index: "src/index.ts" },
    format: ["esm", "cjs"],
    dts: true,
    // No source maps: the package ships dist/ only, and the build is committed (see README).
    sourcemap: false,
    clean: true,
    target: "node20",
    platform: "node",
    outDir: "dist",
    // `import.meta.url` (used to load the optional OpenTelemetry API) also works in the CJS build.
    shims: true,
  },
  {
    // Programs that run against the built package (`sepp-js` resolves to dist/ by self-reference).
    entry: { bench: "bench/bench.ts", agent: "interop/agent.ts" },
    format: ["esm"],
    target: "node20",
    platform: "node",
    outDir: "build",
    external: ["sepp-js"],
    clean: true,
  },
]);
