/**
 * The TypeScript side of the cross-language interop test (`tests/interop/` at the repository root),
 * built to build/agent.js and run with `node`:
 *
 *     node build/agent.js produce --addr HOST:PORT --queue Q --spec FILE.json   -> {"job_ids":[...]}
 *     node build/agent.js work    --addr HOST:PORT --queue Q --count N          -> {"jobs":[...]}
 *
 * A spec is `{"jobs":[{"job_type","payload_b64","encoding","custom":{..},"traceparent"}]}`; each job
 * is enqueued with that traceparent as its trace context. `work` runs the Worker with a catch-all
 * handler until N jobs were handled and acked, and prints what each handler saw. Custom numbers keep
 * JavaScript's rule: integral ones travel as ints, the rest as doubles. Only the answer goes to
 * stdout; errors go to stderr with a non-zero exit.
 */
import { readFileSync } from "node:fs";
import { type CustomValue, type JobCtx, Payload, SeppClient, Worker } from "sepp-js";

interface SpecJob {
  job_type: string;
  payload_b64: string;
  encoding: string;
  custom: Record<string, CustomValue>;
  traceparent: string;
}

function flags(argv: string[]): Map<string, string> {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i] ?? "";
    const value = argv[i + 1];
    if (!name.startsWith("--") || value === undefined)
      throw new Error(`bad argument ${JSON.stringify(name)}`);
    values.set(name.slice(2), value);
  }
  return values;
}

async function produce(client: SeppClient, queue: string, specFile: string): Promise<unknown> {
  const spec = JSON.parse(readFileSync(specFile, "utf8")) as { jobs: SpecJob[] };
  const jobIds: string[] = [];
  for (const job of spec.jobs) {
    const ack = await client.enqueue({
      queue,
      jobType: job.job_type,
      payload: Payload.bytes(Buffer.from(job.payload_b64, "base64"), job.encoding),
      custom: job.custom,
      traceContext: { traceparent: job.traceparent },
    });
    jobIds.push(ack.jobId);
  }
  return { job_ids: jobIds };
}

async function work(client: SeppClient, queue: string, count: number): Promise<unknown> {
  const seen: unknown[] = [];
  const worker = new Worker(client, { queues: [queue], leaseDuration: 30_000 });
  const shutdown = worker.shutdownHandle();
  const describe = (payload: Payload | undefined, ctx: JobCtx) => ({
    id: ctx.id,
    job_type: ctx.jobType,
    payload_b64: payload ? payload.data.toString("base64") : null,
    encoding: payload ? payload.encoding : null,
    custom: Object.fromEntries(
      Object.entries(ctx.custom).map(([key, value]) => [
        key,
        typeof value === "bigint" ? value.toString() : value,
      ]),
    ),
    traceparent: ctx.traceContext?.traceparent ?? null,
  });
  worker.catchAll((payload, ctx) => {
    seen.push(describe(payload, ctx));
    if (seen.length >= count) shutdown.shutdown();
  });
  if (count > 0) await worker.run();
  return { jobs: seen };
}

async function main(): Promise<void> {
  const [mode, ...rest] = process.argv.slice(2);
  const values = flags(rest);
  const need = (name: string) => {
    const value = values.get(name);
    if (value === undefined) throw new Error(`missing --${name}`);
    return value;
  };
  const client = await SeppClient.connect(need("addr"));
  const queue = need("queue");
  let answer: unknown;
  if (mode === "produce") answer = await produce(client, queue, need("spec"));
  else if (mode === "work") answer = await work(client, queue, Number(need("count")));
  else throw new Error(`unknown mode ${JSON.stringify(mode)} (expected produce or work)`);
  client.close();
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`agent: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
