/**
 * A producer and a worker in one program: enqueues a few jobs, runs a Worker until it has handled
 * them all, then shuts it down gracefully.
 *
 *     SEPP_ADDR=127.0.0.1:50051 npx tsx examples/main.ts     (or: npm run example)
 */
import { HandlerError, isJobRejection, Payload, Priority, RetryPolicy, SeppClient, Worker } from "sepp-js";

const JOBS = 3;
const addr = process.env.SEPP_ADDR ?? "127.0.0.1:50051";
const client = await SeppClient.connect(addr, { retryPolicy: new RetryPolicy({ maxAttempts: 3 }) });
const info = await client.getServerInfo();
console.log(`connected to sepp ${info.version}`);

// Producer: one call, one result per job; rejections are values, not exceptions.
const queue = `example-${process.pid}`;
const results = await client.enqueueBatch(
  Array.from({ length: JOBS }, (_, n) => ({
    queue,
    jobType: "greet",
    payload: Payload.text(`visitor ${n}`),
    priority: Priority.P5,
    idempotencyKey: `${queue}-${n}`,
  })),
);
for (const result of results) {
  if (isJobRejection(result)) console.log("rejected:", result.kind);
  else console.log(`enqueued ${result.jobId} (deduplicated: ${result.deduplicated})`);
}

// Consumer: the Worker reserves, runs the handler, and acks (or nacks on a HandlerError).
let handled = 0;
const worker = new Worker(client, { queues: [queue], leaseDuration: 30_000, waitTimeout: 5_000 });
await worker
  .handle("greet", async (payload, ctx) => {
    if (payload === undefined) throw HandlerError.permanent("greet needs a payload");
    console.log(`${ctx}: hello, ${payload.text()}!`);
    if (++handled === JOBS) worker.shutdownHandle().shutdown(); // run() returns once in-flight jobs are settled
  })
  .run();
console.log(`handled ${handled} jobs`);
client.close();
