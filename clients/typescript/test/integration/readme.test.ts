/**
 * Every example in README.md runs as written, against the real server, and typechecks. Each
 * example gets a fresh server; its free names (a connected `client`, `sendEmail`, `handle`, a
 * structured `logger`, and package exports it uses without importing) come from a preamble, and
 * the example's addresses are pointed at the test's server. The connection example really uses
 * TLS with "platform" roots (a test CA added through NODE_EXTRA_CA_CERTS), an API key from the
 * environment, and the host name emails.internal (resolved to the loopback address).
 * Needs the build (`npm run build`): the examples import `sepp-js` itself.
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import * as sepp from "../../src/index.js";
import { makeCertificates } from "../support/certs.js";
import { TestServer } from "../support/server.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const workDir = join(packageDir, ".readme-examples");

interface Example {
  name: string;
  code: string;
}

/** The README's TypeScript blocks, each preceded by an `<!-- example: name -->` marker. */
function readmeExamples(): Example[] {
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)];
  const named = [...readme.matchAll(/<!-- example: ([\w-]+) -->\n```ts\n([\s\S]*?)```/g)];
  assert.equal(
    named.length,
    blocks.length,
    "every ts block in README.md needs an <!-- example: name --> marker",
  );
  return named.map((match) => ({ name: match[1] as string, code: match[2] as string }));
}

/** The names an example uses without defining them, declared ahead of its code. */
function preamble(code: string): string {
  const imported = new Set(
    [...code.matchAll(/import \{([^}]*)\} from "sepp-js"/g)].flatMap((m) =>
      (m[1] ?? "").split(",").map((s) => s.trim()),
    ),
  );
  const exports = Object.keys(sepp).filter(
    (name) => new RegExp(`\\b${name}\\b`).test(code) && !imported.has(name),
  );
  const lines = ['import * as __sepp from "sepp-js";'];
  if (exports.length > 0) lines.push(`const { ${exports.join(", ")} } = __sepp;`);
  if (!/\bconst client\b/.test(code))
    lines.push("const client = await __sepp.SeppClient.connect(process.env.SEPP_ADDR as string);");
  if (/\bsendEmail\b/.test(code)) {
    lines.push(
      'async function sendEmail(message: unknown): Promise<void> { console.log("sent email", JSON.stringify(message)); }',
    );
  }
  if (/\bhandle\(payload/.test(code)) {
    lines.push(
      "async function handle(payload: __sepp.Payload | undefined, ctx: __sepp.JobCtx): Promise<void> {",
      '  console.log("handled", ctx.id, JSON.stringify(payload?.json()));',
      "}",
    );
  }
  if (/\blogger\.warn\(meta/.test(code)) {
    lines.push(
      "const logger = {",
      '  warn: (meta: unknown, msg: string) => console.error("WARN", msg, JSON.stringify(meta)),',
      '  error: (meta: unknown, msg: string) => console.error("ERROR", msg, JSON.stringify(meta)),',
      "};",
    );
  }
  return `${lines.join("\n")}\n\n`;
}

interface Run {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
  waitForOutput(pattern: RegExp): Promise<string>;
}

function runExample(file: string, env: NodeJS.ProcessEnv, preload: string[] = []): Run {
  const imports = ["tsx", ...preload].flatMap((module) => ["--import", module]);
  const child = spawn("node", [...imports, file], {
    cwd: workDir,
    env: { ...process.env, TSX_TSCONFIG_PATH: join(workDir, "tsconfig.run.json"), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const run: Run = {
    child,
    stdout: "",
    stderr: "",
    exited: new Promise((done) => child.once("exit", (code) => done(code))),
    waitForOutput: (pattern) =>
      new Promise((done, fail) => {
        const check = () => {
          const match = pattern.exec(run.stdout + run.stderr);
          if (match) done(match[0]);
        };
        child.stdout?.on("data", check);
        child.stderr?.on("data", check);
        child.once("exit", () => {
          check();
          fail(new Error(`exited before printing ${pattern}:\n${run.stdout}\n${run.stderr}`));
        });
        check();
      }),
  };
  child.stdout?.on("data", (chunk) => {
    run.stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    run.stderr += chunk;
  });
  return run;
}

async function exitsCleanly(run: Run): Promise<void> {
  const code = await run.exited;
  assert.equal(code, 0, `exited with ${code}:\n${run.stdout}\n${run.stderr}`);
}

const examples = readmeExamples();
const servers: TestServer[] = [];

async function server(options: Parameters<typeof TestServer.start>[0] = {}): Promise<TestServer> {
  const started = await TestServer.start(options);
  servers.push(started);
  return started;
}

/** The example's file, with its addresses pointed at `addr`. */
function write(name: string, addr: string): string {
  const example = examples.find((e) => e.name === name);
  assert.ok(example, `README.md has no example ${name}`);
  const [, port] = addr.split(":");
  const code = example.code
    .replaceAll("127.0.0.1:50051", addr)
    .replaceAll("emails.internal:50051", `emails.internal:${port}`);
  const postscript: Record<string, string> = {
    producing: 'console.log("atomic acks", acks.length);\nclient.close();\n',
    worker: "client.close();\n",
    "manual-loop": "client.close();\n",
    connection: 'console.log("server version", (await client.getServerInfo()).version);\nclient.close();\n',
    logging: 'console.log("worker id", worker.workerId);\nclient.close();\n',
    "dead-letters": "client.close();\n",
    cancelling: "client.close();\n",
    schedules: "client.close();\n",
    pausing: "client.close();\n",
  };
  const file = `${name}.ts`;
  writeFileSync(join(workDir, file), `${preamble(code)}${code}\n${postscript[name] ?? ""}`);
  return file;
}

before(() => {
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir);
  writeFileSync(
    join(workDir, "tsconfig.json"),
    JSON.stringify({
      extends: "../tsconfig.json",
      compilerOptions: { noUnusedLocals: false, noUnusedParameters: false },
      include: ["*.ts"],
    }),
  );
  // At run time `sepp-js` resolves to the built package (dist/), not to the sources.
  writeFileSync(
    join(workDir, "tsconfig.run.json"),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "ESNext" } }),
  );
});

after(async () => {
  for (const started of servers) await started.stop();
  rmSync(workDir, { recursive: true, force: true });
});

describe("README examples", () => {
  test("the README has the examples this test knows how to run", () => {
    assert.deepEqual(examples.map((e) => e.name).sort(), [
      "cancelling",
      "connection",
      "dead-letters",
      "logging",
      "manual-loop",
      "pausing",
      "producing",
      "quickstart",
      "schedules",
      "worker",
    ]);
  });

  test("every example typechecks", () => {
    for (const example of examples) write(example.name, "127.0.0.1:1");
    execFileSync(join(packageDir, "node_modules/.bin/tsc"), ["-p", workDir], { stdio: "pipe" });
  });

  test("quickstart: enqueues a job, and its worker processes it", async () => {
    const target = await server();
    const run = runExample(write("quickstart", target.addr), {});
    const enqueued = await run.waitForOutput(/enqueued job [0-9a-f-]{36}/);
    const id = enqueued.split(" ")[2] as string;
    await run.waitForOutput(new RegExp(`processing job ${id} \\{ user: 42 \\}`));
    run.child.kill("SIGTERM"); // the quickstart's worker runs until the process is stopped
    await run.exited;
  });

  test("producing: single, best-effort and atomic enqueues", async () => {
    const target = await server();
    const run = runExample(write("producing", target.addr), { SEPP_ADDR: target.addr });
    await exitsCleanly(run);
    assert.equal(run.stdout.match(/^accepted: [0-9a-f-]{36}$/gm)?.length, 2, run.stdout);
    assert.match(run.stdout, /atomic acks 2/);
    const client = await sepp.SeppClient.connect(target.addr);
    const emails = await client.reserve({
      queues: ["emails"],
      leaseDuration: 1_000,
      maxJobs: 10,
      waitTimeout: 0,
    });
    assert.deepEqual(emails?.map((job) => job.ctx.priority).sort(), [0, 0, 7]);
    client.close();
  });

  test("worker: handles jobs, and stops gracefully on SIGTERM", async () => {
    const target = await server();
    const client = await sepp.SeppClient.connect(target.addr);
    await client.enqueue({
      queue: "emails",
      jobType: "send_welcome",
      payload: sepp.Payload.json({ to: "a@b.com" }),
    });
    await client.enqueue({ queue: "emails", jobType: "send_receipt" });
    const run = runExample(write("worker", target.addr), { SEPP_ADDR: target.addr });
    await run.waitForOutput(/sent email \{"to":"a@b.com"\}/);
    run.child.kill("SIGTERM");
    await exitsCleanly(run);
    // The welcome was acked; the receipt was nacked for retry (it is still on its queue, or dead).
    const left = await client.reserve({
      queues: ["emails"],
      leaseDuration: 1_000,
      maxJobs: 10,
      waitTimeout: 0,
    });
    assert.ok((left ?? []).every((job) => job.ctx.jobType === "send_receipt"));
    client.close();
  });

  test("cancelling: the job is dead-lettered with its reason", async () => {
    const target = await server();
    const run = runExample(write("cancelling", target.addr), { SEPP_ADDR: target.addr });
    await exitsCleanly(run);
    assert.match(run.stdout, /^cancelled before it ran$/m);
    const client = await sepp.SeppClient.connect(target.addr);
    const records = await client.drainDeadLetters({ queue: "reports", max: 10 });
    assert.deepEqual(
      records.map((r) => [r.jobType, r.cause, r.lastReason]),
      [["build_report", sepp.DeadLetterCause.Cancelled, "the user closed the report"]],
    );
    client.close();
  });

  test("schedules: the nightly schedule stays, in its time zone; the heartbeat is deleted", async () => {
    const target = await server();
    const run = runExample(write("schedules", target.addr), { SEPP_ADDR: target.addr });
    await exitsCleanly(run);
    assert.match(run.stdout, /^the next report is due at \d{4}-\d\d-\d\dT0[01]:00:00\.000Z$/m);
    assert.match(run.stdout, /^heartbeat 0 undefined /m);
    assert.match(run.stdout, /^heartbeat deleted: true$/m);
    const client = await sepp.SeppClient.connect(target.addr);
    const left = await client.listSchedules();
    assert.deepEqual(
      left.map((s) => [s.definition.id, s.definition.cron, s.definition.timeZone]),
      [["nightly-report", "0 2 * * *", "Europe/Zurich"]],
    );
    client.close();
  });

  test("pausing: nothing is reserved while paused; both pauses are listed, then lifted", async () => {
    const target = await server();
    const run = runExample(write("pausing", target.addr), { SEPP_ADDR: target.addr });
    await exitsCleanly(run);
    assert.match(run.stdout, /^reserved while paused: null$/m);
    assert.match(run.stdout, /^every queue until \d{4}-\d\d-\d\dT[\d:.]+Z\nreports until resumed$/m);
    assert.match(run.stdout, /^reports resumed: true$/m);
    const client = await sepp.SeppClient.connect(target.addr);
    assert.deepEqual(await client.listPauses(), []);
    const jobs = await client.reserve({ queues: ["reports"], leaseDuration: 30_000, waitTimeout: 0 });
    assert.deepEqual(
      jobs?.map((job) => job.ctx.jobType),
      ["build_report"],
    );
    client.close();
  });

  test("manual reserve loop: reserves, handles and acks", async () => {
    const target = await server();
    const client = await sepp.SeppClient.connect(target.addr);
    const { jobId } = await client.enqueue({
      queue: "emails",
      jobType: "t",
      payload: sepp.Payload.json({ n: 1 }),
    });
    const run = runExample(write("manual-loop", target.addr), { SEPP_ADDR: target.addr });
    await exitsCleanly(run);
    assert.match(run.stdout, new RegExp(`handled ${jobId} \\{"n":1\\}`));
    assert.equal(await client.reserve({ queues: ["emails"], leaseDuration: 1_000, waitTimeout: 0 }), null);
    client.close();
  });

  test("connection options: TLS with platform roots, an API key, retries and timeouts", async () => {
    const certs = makeCertificates(target_dir(), ["emails.internal"]);
    const target = await server({
      serverExtra: `tls_cert_path = ${JSON.stringify(certs.certPath)}\ntls_key_path = ${JSON.stringify(certs.keyPath)}`,
      tail: '[auth]\napi_keys = [{ name = "readme", key = "readme-key" }]',
    });
    const env = { SEPP_API_KEY: "readme-key", NODE_EXTRA_CA_CERTS: certs.caPath };
    const run = runExample(write("connection", target.addr), env, [
      join(packageDir, "test/support/dns-preload.mjs"),
    ]);
    await exitsCleanly(run);
    assert.match(run.stdout, /server version \S+/);
  });

  test("logging: a console logger on the client, a structured one on the Worker", async () => {
    const target = await server();
    const run = runExample(write("logging", target.addr), {});
    await exitsCleanly(run);
    assert.match(run.stdout, /connected to the sepp server/);
    assert.match(run.stdout, /worker id \S+-\d+-[0-9a-f]{8}/);
  });

  test("dead letters: drains the records and replays them", async () => {
    const target = await server();
    const client = await sepp.SeppClient.connect(target.addr);
    const { jobId } = await client.enqueue({ queue: "emails", jobType: "send_welcome" });
    const [job] = (await client.reserve({ queues: ["emails"], leaseDuration: 1_000 })) ?? [];
    assert.ok(job);
    await client.nack(job.ctx, { retry: sepp.RetryDirective.deadLetter(), reason: "mailbox full" });
    const run = runExample(write("dead-letters", target.addr), { SEPP_ADDR: target.addr });
    await exitsCleanly(run);
    assert.match(run.stderr, new RegExp(`${jobId} failed: rejected \\(mailbox full\\)`));
    const replayed = await client.reserve({ queues: ["emails"], leaseDuration: 1_000, waitTimeout: 0 });
    assert.equal(replayed?.[0]?.ctx.jobType, "send_welcome");
    client.close();
  });
});

/** A directory for this run's certificates, removed with the examples. */
function target_dir(): string {
  const dir = join(workDir, "certs");
  mkdirSync(dir, { recursive: true });
  return dir;
}
