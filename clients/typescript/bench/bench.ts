/**
 * The client benchmark the benchmark harness runs against a live server (built to build/bench.js,
 * run with `node`):
 *
 *     node build/bench.js --addr 127.0.0.1:PORT --phase enqueue-single|enqueue-batch|drain \
 *       --jobs N --concurrency C [--batch 64] [--queue bench] [--payload-bytes 256]
 *
 * - enqueue-single: C concurrent tasks, each enqueuing one job per call until N jobs are in;
 * - enqueue-batch: C concurrent tasks, each enqueuing `--batch` jobs per call;
 * - drain: a Worker with maxInFlight C and a handler that returns at once, until N jobs were acked
 *   (the harness fills the queue first).
 *
 * Prints one JSON line: the measured phase's wall time and this process's CPU time over it.
 * Anything else goes to stderr; a failure exits non-zero.
 */
import { randomBytes } from "node:crypto";
import { type EnqueueRequest, isJobRejection, Payload, SeppClient, VERSION, Worker } from "sepp-js";

interface Args {
  addr: string;
  phase: "enqueue-single" | "enqueue-batch" | "drain";
  jobs: number;
  concurrency: number;
  batch: number;
  queue: string;
  payloadBytes: number;
}

function parseArgs(argv: string[]): Args {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i] ?? "";
    const value = argv[i + 1];
    if (!name.startsWith("--") || value === undefined)
      throw new Error(`bad argument ${JSON.stringify(name)}`);
    values.set(name.slice(2), value);
  }
  const count = (name: string, fallback?: number) => {
    const raw = values.get(name);
    if (raw === undefined && fallback !== undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer`);
    return value;
  };
  const phase = values.get("phase");
  if (phase !== "enqueue-single" && phase !== "enqueue-batch" && phase !== "drain") {
    throw new Error("--phase must be enqueue-single, enqueue-batch or drain");
  }
  const addr = values.get("addr");
  if (!addr) throw new Error("--addr is required");
  return {
    addr,
    phase,
    jobs: count("jobs"),
    concurrency: Math.max(1, count("concurrency")),
    batch: Math.max(1, count("batch", 64)),
    queue: values.get("queue") ?? "bench",
    payloadBytes: count("payload-bytes", 256),
  };
}

/** Runs `tasks` concurrent loops that each take `size` jobs at a time until `total` are taken. */
async function concurrently(
  total: number,
  tasks: number,
  size: number,
  work: (count: number) => Promise<void>,
) {
  let taken = 0;
  const loop = async () => {
    while (taken < total) {
      const count = Math.min(size, total - taken);
      taken += count;
      await work(count);
    }
  };
  await Promise.all(Array.from({ length: tasks }, loop));
}

async function enqueue(client: SeppClient, args: Args, perCall: number): Promise<void> {
  const payload = args.payloadBytes > 0 ? Payload.bytes(randomBytes(args.payloadBytes)) : undefined;
  const job: EnqueueRequest = { queue: args.queue, jobType: "bench", payload };
  await concurrently(args.jobs, args.concurrency, perCall, async (count) => {
    if (count === 1 && perCall === 1) {
      await client.enqueue(job);
      return;
    }
    const results = await client.enqueueBatch(Array.from({ length: count }, () => job));
    const rejection = results.find(isJobRejection);
    if (rejection) throw new Error(`a job was rejected: ${JSON.stringify(rejection)}`);
  });
}

async function drain(client: SeppClient, args: Args): Promise<void> {
  if (args.jobs === 0) return;
  let handled = 0;
  const worker = new Worker(client, {
    queues: [args.queue],
    leaseDuration: 60_000,
    maxInFlight: args.concurrency,
  });
  const shutdown = worker.shutdownHandle();
  const done = () => {
    handled++;
    if (handled >= args.jobs) shutdown.shutdown();
  };
  // The Worker resolves run() once the jobs in flight are acked, so every counted job is acked.
  await worker.handle("bench", done).catchAll(done).run();
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // Diagnostics go to stderr: stdout carries only the result line.
  const logger = { warn: console.error, error: console.error };
  const client = await SeppClient.connect(args.addr, { logger });
  const startedCpu = process.cpuUsage();
  const started = performance.now();
  if (args.phase === "drain") await drain(client, args);
  else await enqueue(client, args, args.phase === "enqueue-batch" ? args.batch : 1);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(startedCpu);
  client.close();
  const result = {
    client: "sepp-js",
    client_version: VERSION,
    phase: args.phase,
    jobs: args.jobs,
    seconds: Number(seconds.toFixed(6)),
    cpu_seconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(6)),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
