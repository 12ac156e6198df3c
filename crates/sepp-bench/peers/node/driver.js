// One phase of the peer comparison against one peer job queue, driven through that peer's own
// client library. `sepp-bench peers` starts this program once per phase:
//
//   node driver.js --peer bullmq|pg-boss|rabbitmq --url URL --phase PHASE --jobs M
//                  --concurrency N --batch B --queue NAME [--payload-bytes 256] [--timeout-s 600]
//   (--timeout-s defaults to $SEPP_PEERS_DRIVER_TIMEOUT_S, else 600)
//
// PHASE is enqueue-single (N producers, one job per call), enqueue-batch (N producers, B jobs
// per call), drain (N workers that each take a job and acknowledge it, until M are acknowledged)
// or latency (M sequential enqueue -> take -> acknowledge round trips on one connection).
// Every loop is closed: a producer or worker sends its next call when the previous one is
// answered. The program connects, prints `ready`, waits for one line on stdin (so the harness
// samples CPU around the phase alone), runs the phase and prints one JSON line:
//   {"client":..., "client_version":..., "server_version":..., "phase":..., "jobs":...,
//    "seconds":..., "p50_us":..., "p99_us":...}
// Errors go to stderr with a non-zero exit.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

function parseArgs(argv) {
  const args = { payloadBytes: 256, batch: 64, concurrency: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (!key.startsWith('--') || value === undefined) throw new Error(`bad argument ${key}`);
    const name = key.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    args[name] = ['jobs', 'concurrency', 'batch', 'payloadBytes'].includes(name) ? Number(value) : value;
  }
  for (const required of ['peer', 'url', 'phase', 'jobs', 'queue']) {
    if (args[required] === undefined) throw new Error(`--${required} is required`);
  }
  if (!Number.isInteger(args.jobs) || args.jobs < 1) throw new Error('--jobs must be a positive integer');
  args.concurrency = Math.max(1, args.concurrency | 0);
  args.batch = Math.max(1, args.batch | 0);
  return args;
}

// What a phase has done so far, for the watchdog's message.
let progress = 'no progress recorded';

// Read from the installed package itself (some packages do not export their package.json).
const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;

function waitForGo() {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk) => {
      seen += chunk;
      if (seen.includes('\n')) {
        process.stdin.off('data', onData);
        process.stdin.pause();
        resolve();
      }
    };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', onData);
    process.stdin.once('end', () => (seen.includes('\n') ? resolve() : reject(new Error('stdin closed before the go line'))));
  });
}

// Hands out the jobs of a phase to its loops: `take(n)` returns how many of the next n are
// still to do (0 when the phase is done).
function tickets(total) {
  let next = 0;
  return (count) => {
    const granted = Math.max(0, Math.min(count, total - next));
    next += granted;
    return granted;
  };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

// Runs `once` `rounds` times in sequence and returns the sorted round-trip times in µs.
async function roundTrips(rounds, once) {
  for (let i = 0; i < Math.min(20, rounds); i++) await once(); // warm-up
  const times = [];
  for (let i = 0; i < rounds; i++) {
    const start = process.hrtime.bigint();
    await once();
    times.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return times.sort((a, b) => a - b);
}

// ---------------------------------------------------------------- BullMQ (Redis)

async function bullmq(args, payload) {
  const { Queue, Worker } = require('bullmq');
  const url = new URL(args.url);
  const connection = { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null };
  // Completed jobs are removed, as a queue that is drained for good would be set up.
  const jobOptions = { removeOnComplete: true, removeOnFail: true };
  const data = { payload };
  const opened = [];
  const queue = (options = {}) => {
    const q = new Queue(args.queue, { connection, ...options });
    opened.push(q);
    return q;
  };
  const close = () => Promise.all(opened.map((q) => q.close()));
  const serverVersion = async () => {
    const { default: IORedis } = await import('ioredis');
    const client = new IORedis(connection);
    const info = await client.info('server');
    await client.quit();
    return `redis ${/redis_version:(\S+)/.exec(info)?.[1]}`;
  };

  if (args.phase === 'enqueue-single' || args.phase === 'enqueue-batch') {
    const producers = Array.from({ length: args.concurrency }, () => queue());
    await Promise.all(producers.map((q) => q.waitUntilReady()));
    const server = await serverVersion();
    const per = args.phase === 'enqueue-single' ? 1 : args.batch;
    const take = tickets(args.jobs);
    return {
      server,
      run: () =>
        Promise.all(
          producers.map(async (q) => {
            for (let n = take(per); n > 0; n = take(per)) {
              if (per === 1) await q.add('bench', data, jobOptions);
              else await q.addBulk(Array.from({ length: n }, () => ({ name: 'bench', data, opts: jobOptions })));
            }
          }),
        ),
      close,
    };
  }
  if (args.phase === 'drain') {
    const probe = queue();
    await probe.waitUntilReady();
    const server = await serverVersion();
    let done;
    const finished = new Promise((resolve) => (done = resolve));
    let completed = 0;
    let worker;
    return {
      server,
      run: async () => {
        // One Worker with concurrency N: BullMQ's own consumer, N jobs in flight.
        worker = new Worker(args.queue, async () => null, { connection, concurrency: args.concurrency });
        worker.on('completed', () => {
          progress = `${completed + 1} of ${args.jobs} jobs completed`;
          if (++completed === args.jobs) done();
        });
        worker.on('failed', (job, error) => console.error(`driver: job ${job?.id} failed: ${error}`));
        worker.on('error', (error) => console.error(error));
        // Completion is also read from Redis, once a second: a completed event that never
        // reaches this process must not leave the phase waiting.
        const check = setInterval(async () => {
          const left = await probe.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused');
          if (Object.values(left).every((count) => count === 0)) {
            if (completed !== args.jobs) console.error(`driver: the queue is empty after ${completed} completed events`);
            done();
          }
        }, 1000);
        await finished;
        clearInterval(check);
      },
      close: async () => {
        await worker.close();
        const left = await probe.getJobCounts('wait', 'active');
        await close();
        if (left.wait + left.active !== 0) throw new Error(`jobs left after the drain: ${JSON.stringify(left)}`);
      },
    };
  }
  if (args.phase === 'latency') {
    const q = queue();
    await q.waitUntilReady();
    const server = await serverVersion();
    const worker = new Worker(args.queue, null, { connection, autorun: false });
    const token = 'latency';
    let times;
    return {
      server,
      run: async () => {
        times = await roundTrips(args.jobs, async () => {
          await q.add('bench', data, jobOptions);
          const job = await worker.getNextJob(token);
          if (!job) throw new Error('no job after enqueue');
          await job.moveToCompleted(null, token, false);
        });
      },
      times: () => times,
      close: async () => {
        await worker.close();
        await close();
      },
    };
  }
  throw new Error(`unknown phase ${args.phase}`);
}

// ---------------------------------------------------------------- pg-boss (PostgreSQL)

async function pgBoss(args, payload) {
  const { default: PgBoss } = await import('pg-boss');
  // A pool as large as the concurrency, so that N producers or workers are N sessions.
  const boss = new PgBoss({ connectionString: args.url, max: args.concurrency + 2, schedule: false });
  boss.on('error', (error) => console.error(error));
  await boss.start();
  await boss.createQueue(args.queue);
  const [{ server_version }] = await boss.getDb().executeSql('show server_version').then((r) => r.rows);
  const server = `postgresql ${server_version.split(' ')[0]}`;
  const data = { payload };
  const close = () => boss.stop({ graceful: false, wait: true });
  const take = tickets(args.jobs);

  if (args.phase === 'enqueue-single' || args.phase === 'enqueue-batch') {
    const per = args.phase === 'enqueue-single' ? 1 : args.batch;
    return {
      server,
      run: () =>
        Promise.all(
          Array.from({ length: args.concurrency }, async () => {
            for (let n = take(per); n > 0; n = take(per)) {
              if (per === 1) await boss.send(args.queue, data);
              else await boss.insert(Array.from({ length: n }, () => ({ name: args.queue, data })));
            }
          }),
        ),
      close,
    };
  }
  if (args.phase === 'drain') {
    let acked = 0;
    return {
      server,
      run: () =>
        Promise.all(
          Array.from({ length: args.concurrency }, async () => {
            while (acked < args.jobs) {
              const jobs = await boss.fetch(args.queue);
              if (!jobs || jobs.length === 0) {
                if (acked < args.jobs) await new Promise((resolve) => setTimeout(resolve, 1));
                continue;
              }
              await boss.complete(
                args.queue,
                jobs.map((job) => job.id),
              );
              acked += jobs.length;
            }
          }),
        ),
      close: async () => {
        const left = await boss.getQueueSize(args.queue);
        await close();
        if (left !== 0) throw new Error(`${left} jobs left after the drain`);
      },
    };
  }
  if (args.phase === 'latency') {
    let times;
    return {
      server,
      run: async () => {
        times = await roundTrips(args.jobs, async () => {
          await boss.send(args.queue, data);
          const jobs = await boss.fetch(args.queue);
          if (!jobs || jobs.length !== 1) throw new Error('no job after enqueue');
          await boss.complete(args.queue, jobs[0].id);
        });
      },
      times: () => times,
      close,
    };
  }
  throw new Error(`unknown phase ${args.phase}`);
}

// ---------------------------------------------------------------- RabbitMQ (amqplib)

async function rabbitmq(args, payload) {
  const amqp = require('amqplib');
  const body = Buffer.from(payload);
  // A quorum queue: replicated (here one node), written to its log and synced before a
  // publisher confirm is sent.
  const queueOptions = { durable: true, arguments: { 'x-queue-type': 'quorum' } };
  const connections = [];
  const open = async () => {
    const connection = await amqp.connect(args.url, { noDelay: true });
    connections.push(connection);
    return connection;
  };
  const close = () => Promise.all(connections.map((c) => c.close()));
  const first = await open();
  const server = `rabbitmq ${first.connection.serverProperties.version}`;
  const setup = await first.createChannel();
  await setup.assertQueue(args.queue, queueOptions);
  await setup.close();
  const publish = (channel, count) =>
    new Promise((resolve, reject) => {
      for (let i = 0; i < count; i++) channel.sendToQueue(args.queue, body, { persistent: true });
      channel.waitForConfirms().then(resolve, reject);
    });
  const take = tickets(args.jobs);

  if (args.phase === 'enqueue-single' || args.phase === 'enqueue-batch') {
    const per = args.phase === 'enqueue-single' ? 1 : args.batch;
    // One connection with one confirm channel per producer.
    const channels = [];
    for (let i = 0; i < args.concurrency; i++) {
      const connection = i === 0 ? first : await open();
      channels.push(await connection.createConfirmChannel());
    }
    return {
      server,
      run: () =>
        Promise.all(
          channels.map(async (channel) => {
            for (let n = take(per); n > 0; n = take(per)) await publish(channel, n);
          }),
        ),
      close,
    };
  }
  if (args.phase === 'drain') {
    const channels = [];
    for (let i = 0; i < args.concurrency; i++) {
      const connection = i === 0 ? first : await open();
      const channel = await connection.createChannel();
      await channel.prefetch(1);
      channels.push(channel);
    }
    let acked = 0;
    return {
      server,
      run: async () => {
        let done;
        const finished = new Promise((resolve) => (done = resolve));
        for (const channel of channels) {
          await channel.consume(
            args.queue,
            (message) => {
              if (!message) return;
              channel.ack(message);
              if (++acked === args.jobs) done();
            },
            { noAck: false },
          );
        }
        await finished;
        // Acks are not answered in AMQP; closing a channel is, after the broker has taken
        // every ack sent before it.
        await Promise.all(channels.map((channel) => channel.close()));
      },
      close: async () => {
        const check = await first.createChannel();
        const { messageCount } = await check.checkQueue(args.queue);
        await check.deleteQueue(args.queue);
        await check.close();
        await close();
        if (messageCount !== 0) throw new Error(`${messageCount} messages left after the drain`);
      },
    };
  }
  if (args.phase === 'latency') {
    const channel = await first.createConfirmChannel();
    await channel.prefetch(1);
    // Deliveries wait here until a round trip takes them.
    const arrived = [];
    let waiting = null;
    await channel.consume(
      args.queue,
      (message) => {
        if (waiting) {
          const resolve = waiting;
          waiting = null;
          resolve(message);
        } else arrived.push(message);
      },
      { noAck: false },
    );
    const next = () => (arrived.length > 0 ? Promise.resolve(arrived.shift()) : new Promise((r) => (waiting = r)));
    let times;
    return {
      server,
      run: async () => {
        times = await roundTrips(args.jobs, async () => {
          await publish(channel, 1);
          channel.ack(await next());
        });
      },
      times: () => times,
      close,
    };
  }
  throw new Error(`unknown phase ${args.phase}`);
}


// ----------------------------------------------------------------

const PEERS = {
  bullmq: [bullmq, 'bullmq'],
  'pg-boss': [pgBoss, 'pg-boss'],
  rabbitmq: [rabbitmq, 'amqplib'],
};

async function main() {
  const args = parseArgs(process.argv.slice(2));
  // A phase that cannot finish (a lost job, a broker that stopped answering) fails instead of
  // hanging the harness.
  const limitSeconds = Number(args.timeoutS ?? process.env.SEPP_PEERS_DRIVER_TIMEOUT_S ?? 600);
  setTimeout(() => {
    console.error(`driver error: ${args.peer} ${args.phase} did not finish within ${limitSeconds} s (${progress})`);
    process.exit(1);
  }, limitSeconds * 1000).unref();
  const entry = PEERS[args.peer];
  if (!entry) throw new Error(`unknown peer ${args.peer}: use ${Object.keys(PEERS).join(', ')}`);
  const [driver, library] = entry;
  const payload = 'x'.repeat(args.payloadBytes);
  const phase = await driver(args, payload);
  console.log('ready');
  await waitForGo();
  const start = process.hrtime.bigint();
  await phase.run();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const times = phase.times ? phase.times() : [];
  console.log(
    JSON.stringify({
      client: library,
      client_version: version(library),
      server_version: phase.server,
      phase: args.phase,
      jobs: args.jobs,
      seconds,
      p50_us: percentile(times, 50),
      p99_us: percentile(times, 99),
    }),
  );
  await phase.close();
  process.exit(0);
}

main().catch((error) => {
  console.error(`driver error: ${error?.stack ?? error}`);
  process.exit(1);
});
