/** The programs in examples/ run to completion against the real server. Needs the build. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { SeppClient } from "../../src/index.js";
import { TestServer } from "../support/server.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
let server: TestServer;
let dir: string;

before(async () => {
  server = await TestServer.start();
  dir = mkdtempSync(join(tmpdir(), "sepp-js-examples-"));
  // At run time `sepp-js` resolves to the built package, as it would for a user.
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "ESNext" } }),
  );
});

after(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function runExample(name: string): string {
  return execFileSync("node", ["--import", "tsx", join("examples", name)], {
    cwd: packageDir,
    env: { ...process.env, SEPP_ADDR: server.addr, TSX_TSCONFIG_PATH: join(dir, "tsconfig.json") },
    encoding: "utf8",
  });
}

test("main.ts enqueues its jobs and its worker handles them all", () => {
  const output = runExample("main.ts");
  assert.equal(output.match(/^enqueued \S+ \(deduplicated: false\)$/gm)?.length, 3, output);
  assert.equal(output.match(/: hello, visitor \d!$/gm)?.length, 3, output);
  assert.match(output, /handled 3 jobs/);
});

test("traced.ts prints the producer's spans and a sepp.process span linked to them", async () => {
  const probe = await SeppClient.connect(server.addr);
  const streamingServer = (await probe.getServerInfo()).features.includes("consume");
  probe.close();
  const output = runExample("traced.ts");
  const traceId = /in trace ([0-9a-f]{32})/.exec(output)?.[1];
  assert.ok(traceId, output);
  for (const name of [
    "checkout",
    "sepp.enqueue",
    // A Worker against a server with the Consume stream takes the job without a reserve.
    ...(streamingServer ? [] : ["sepp.reserve"]),
    "sepp.process",
    "render_receipt",
    "sepp.ack",
  ]) {
    assert.match(output, new RegExp(`name: '${name.replace(".", "\\.")}'`), name);
  }
  assert.match(output, new RegExp(`produced in 00-${traceId}-[0-9a-f]{16}-01`));
  assert.match(output, new RegExp(`links: \\[\\s*\\{\\s*context: \\{\\s*traceId: '${traceId}'`));
});
