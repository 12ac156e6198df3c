/**
 * The packed package as an application installs it, without `@opentelemetry/api`: `npm pack`, unpack
 * into a fresh node_modules next to only its two dependencies, then run an ESM and a CommonJS program
 * against the real server and typecheck TypeScript consumers of both builds. Without the API, jobs
 * get no trace context unless given one, and the Worker still runs (its spans are no-ops).
 * Needs the build (`npm run build`).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { TestServer } from "../support/server.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
let server: TestServer;
let app: string;

before(async () => {
  assert.ok(existsSync(join(packageDir, "dist/index.js")), "dist/ is missing: run `npm run build` first");
  app = mkdtempSync(join(tmpdir(), "sepp-js-app-"));
  execFileSync("npm", ["pack", "--silent", "--pack-destination", app], { cwd: packageDir, stdio: "ignore" });
  const tarball = readdirSync(app).find((name) => name.endsWith(".tgz"));
  assert.ok(tarball, "npm pack made no tarball");
  execFileSync("tar", ["-xzf", join(app, tarball), "-C", app]);
  mkdirSync(join(app, "node_modules/@grpc"), { recursive: true });
  mkdirSync(join(app, "node_modules/@bufbuild"), { recursive: true });
  renameSync(join(app, "package"), join(app, "node_modules/sepp-js"));
  for (const dependency of ["@grpc/grpc-js", "@bufbuild/protobuf"]) {
    symlinkSync(join(packageDir, "node_modules", dependency), join(app, "node_modules", dependency), "dir");
  }
  server = await TestServer.start();
});

after(async () => {
  await server?.stop();
  if (app) rmSync(app, { recursive: true, force: true });
});

/** A program that enqueues a job without and one with a trace context, and reports what the Worker saw. */
const program = (load: string) => `${load}
const client = await SeppClient.connect(process.env.SEPP_ADDR);
const queue = "package-" + process.argv[2];
await client.enqueue({ queue, jobType: "plain", payload: Payload.json({ ok: true }) });
await client.enqueue({ queue, jobType: "traced", traceContext: { traceparent: ${JSON.stringify(TRACEPARENT)} } });
const seen = {};
const worker = new Worker(client, { queues: [queue], leaseDuration: 30000, waitTimeout: 1000 });
await worker
  .catchAll((payload, ctx) => {
    seen[ctx.jobType] = { traceContext: ctx.traceContext ?? null, payload: payload ? payload.json() : null };
    if (Object.keys(seen).length === 2) worker.shutdownHandle().shutdown();
  })
  .run();
client.close();
console.log(JSON.stringify(seen));
`;

describe("the packed package without @opentelemetry/api", () => {
  test("the application cannot load the OpenTelemetry API", () => {
    const require = createRequire(join(app, "node_modules/sepp-js/dist/index.cjs"));
    assert.throws(() => require.resolve("@opentelemetry/api"), /Cannot find module/);
  });

  for (const [format, file, load] of [
    ["ESM", "main.mjs", 'import { Payload, SeppClient, Worker } from "sepp-js";'],
    ["CommonJS", "main.cjs", 'const { Payload, SeppClient, Worker } = require("sepp-js");\n(async () => {'],
  ] as const) {
    test(`the ${format} build enqueues and works jobs, and stamps no trace context of its own`, () => {
      const source = format === "ESM" ? program(load) : `${program(load)}})();\n`;
      writeFileSync(join(app, file), source);
      const output = execFileSync("node", [file, format], {
        cwd: app,
        env: { ...process.env, SEPP_ADDR: server.addr },
      });
      assert.deepEqual(JSON.parse(output.toString()), {
        plain: { traceContext: null, payload: { ok: true } },
        traced: { traceContext: { traceparent: TRACEPARENT }, payload: null },
      });
    });
  }

  test("TypeScript consumers of the ESM and CommonJS builds typecheck against the shipped types", () => {
    const consumer = `
      const client = await SeppClient.connect("127.0.0.1:1");
      const ack: EnqueueAck = await client.enqueue({ queue: "q", jobType: "t", payload: Payload.json({}) });
      const results = await client.enqueueBatch([{ queue: "q", jobType: "t", priority: Priority.P7 }]);
      for (const result of results) if (isJobRejection(result)) console.log(describeJobRejection(result));
      new Worker(client, { queues: ["q"], leaseDuration: 1000 }).handle("t", async (payload, ctx) => {
        if (ctx.attempt > 2) throw HandlerError.retryAfter("later", 1000);
        payload?.json();
      });
      void ack;
    `;
    const imports =
      "Payload, SeppClient, Worker, HandlerError, Priority, isJobRejection, describeJobRejection";
    writeFileSync(
      join(app, "esm.mts"),
      `import { ${imports}, type EnqueueAck } from "sepp-js";\n${consumer}\nexport {};\n`,
    );
    writeFileSync(
      join(app, "cjs.cts"),
      `import sepp = require("sepp-js");\nconst { ${imports} } = sepp;\ntype EnqueueAck = sepp.EnqueueAck;\nasync function main() {${consumer}}\nvoid main;\n`,
    );
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          strict: true,
          noEmit: true,
          types: ["node"],
          typeRoots: [join(packageDir, "node_modules/@types")],
        },
        files: ["esm.mts", "cjs.cts"],
      }),
    );
    execFileSync(join(packageDir, "node_modules/.bin/tsc"), ["-p", app], { stdio: "pipe" });
  });
});
