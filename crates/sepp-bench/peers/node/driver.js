// One phase of the peer comparison against one peer job queue, driven through that peer's own
// client library. `sepp-bench peers` starts this program once per phase:
//
//   node driver.js --peer bullmq|pg-boss|rabbitmq|beanstalkd --url URL --phase PHASE --jobs M
//                  --concurrency N --batch B --queue NAME [--shape per-producer|shared]
//                  [--payload-bytes 256] [--timeout-s 600]
//   (--timeout-s defaults to $SEPP_PEERS_DRIVER_TIMEOUT_S, else 600)
//
// PHASE is enqueue-single (N producers, one job per call), enqueue-batch (N producers, B jobs
// per call), drain (N jobs in flight, each taken and acknowledged, until M are acknowledged)
// or latency (M sequential enqueue -> take -> acknowledge round trips on one connection).
//
// SHAPE says how the N producers and the N in flight are connected. per-producer (the default):
// every producer and every worker has a connection (or client instance) of its own. shared: the
// way each peer's documentation has an application do it, one client per process with
// concurrent calls on it; each peer's function below says what that is for it.
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
  const args = { payloadBytes: 256, batch: 64, concurrency: 1, shape: 'per-producer' };
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
  if (!['per-producer', 'shared'].includes(args.shape)) throw new Error('--shape must be per-producer or shared');
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
    // per-producer: a Queue (a Redis connection) per producer. shared: one Queue for the
    // process, as BullMQ's guide has it, with the N producers' add() calls concurrent on it
    // (ioredis pipelines them on its one connection).
    const queues = Array.from({ length: args.shape === 'shared' ? 1 : args.concurrency }, () => queue());
    const producers = Array.from({ length: args.concurrency }, (_, i) => queues[i % queues.length]);
    await Promise.all(queues.map((q) => q.waitUntilReady()));
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
        // One Worker with concurrency N, in both shapes: BullMQ's own consumer, N jobs in flight.
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
  const shared = args.shape === 'shared';
  // per-producer: a pool as large as the concurrency, so that N producers or workers are N
  // sessions. shared: one PgBoss instance with its default pool (max 10 connections), as an
  // application constructs it.
  const pool = shared ? {} : { max: args.concurrency + 2 };
  const boss = new PgBoss({ connectionString: args.url, ...pool, schedule: false });
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
  if (args.phase === 'drain' && shared) {
    // pg-boss's own consumer: one work() worker fetching up to N jobs per poll (batchSize), its
    // handler taking the batch at once; pg-boss completes the batch when the handler returns.
    // pollingIntervalSeconds is at its minimum (0.5 s), and after a full batch the worker is
    // woken with notifyWorker(), which pg-boss documents for skipping the polling interval, so
    // a backlog is not taken at one batch per interval.
    let handled = 0;
    let done;
    const finished = new Promise((resolve) => (done = resolve));
    return {
      server,
      run: async () => {
        let workerId;
        workerId = await boss.work(
          args.queue,
          { batchSize: args.concurrency, pollingIntervalSeconds: 0.5 },
          async (jobs) => {
            handled += jobs.length;
            progress = `${handled} of ${args.jobs} jobs handled`;
            if (handled >= args.jobs) done();
            else if (jobs.length === args.concurrency && workerId) boss.notifyWorker(workerId);
          },
        );
        await finished;
        // pg-boss completes a batch after its handler returned, without waiting: the phase ends
        // when no job of the queue is left before the completed state.
        while ((await boss.getQueueSize(args.queue, { before: 'completed' })) > 0) {
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        await boss.offWork(args.queue);
      },
      close: async () => {
        const left = await boss.getQueueSize(args.queue);
        await close();
        if (left !== 0) throw new Error(`${left} jobs left after the drain`);
      },
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
    // One confirm channel per producer. per-producer: each on a connection of its own.
    // shared: all on one connection, as RabbitMQ's guides advise (connections are long-lived
    // and few, a channel per thread or task that publishes).
    const channels = [];
    for (let i = 0; i < args.concurrency; i++) {
      const connection = i === 0 || args.shape === 'shared' ? first : await open();
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
    // per-producer: N consumers, each a channel with prefetch 1 on a connection of its own.
    // shared: one consumer on one channel with prefetch N (N unacknowledged deliveries in
    // flight), as RabbitMQ's consumer-prefetch guide sets a consumer up.
    const shared = args.shape === 'shared';
    const channels = [];
    for (let i = 0; i < (shared ? 1 : args.concurrency); i++) {
      const connection = i === 0 ? first : await open();
      const channel = await connection.createChannel();
      await channel.prefetch(shared ? args.concurrency : 1);
      channels.push(channel);
    }
    let acked = 0;
    let redelivered = 0;
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
              if (message.fields.redelivered) redelivered++;
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
        // A quorum queue's count can trail the acks the broker already took: it gets up to
        // 3 s to reach 0.
        let { messageCount } = await check.checkQueue(args.queue);
        for (let tries = 0; messageCount !== 0 && tries < 300; tries++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          ({ messageCount } = await check.checkQueue(args.queue));
        }
        await check.deleteQueue(args.queue);
        await check.close();
        await close();
        if (messageCount !== 0) {
          throw new Error(`${messageCount} messages left after the drain (${redelivered} deliveries were redeliveries)`);
        }
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

// ---------------------------------------------------------------- beanstalkd (jackd)

async function beanstalkd(args, payload) {
  const { default: Jackd } = await import('jackd');
  const url = new URL(args.url);
  const address = { host: url.hostname, port: Number(url.port) };
  const clients = [];
  const open = async () => {
    const client = new Jackd();
    await client.connect(address);
    clients.push(client);
    return client;
  };
  const close = () => Promise.all(clients.map((client) => client.quit()));
  const first = await open();
  const stats = await first.stats();
  const server = `beanstalkd ${/version: "?([^"\s]+)"?/.exec(stats)?.[1]}`;
  const take = tickets(args.jobs);
  // A job counts as enqueued once put is answered INSERTED: beanstalkd (run with -f 0) has then
  // written it to its binlog and fsynced it. The TTR is large: no job is handed out twice.
  // The payload goes as a string: jackd 2 sends a string's bytes as they are, but turns any
  // object, a Buffer included, into JSON.
  const put = (client) => client.put(payload, { ttr: 600 });
  // Takes a ready job of the watched tube and deletes it (beanstalkd's acknowledgement, also
  // written to the binlog).
  const reserveAndDelete = async (client) => {
    const job = await client.reserve();
    await client.delete(job.id);
  };
  const consumer = async (client) => {
    await client.watch(args.queue);
    await client.ignore('default');
    return client;
  };

  if (args.phase === 'enqueue-single') {
    // per-producer: a connection per producer. shared: one jackd client for the process with
    // the N producers' put() calls concurrent on it: jackd writes each command at once and
    // matches the answers in order, so they are pipelined on the one connection.
    const producers = [];
    for (let i = 0; i < (args.shape === 'shared' ? 1 : args.concurrency); i++) {
      const client = i === 0 ? first : await open();
      await client.use(args.queue);
      producers.push(client);
    }
    return {
      server,
      run: () =>
        Promise.all(
          Array.from({ length: args.concurrency }, async (_, i) => {
            const client = producers[i % producers.length];
            while (take(1) > 0) await put(client);
          }),
        ),
      close,
    };
  }
  if (args.phase === 'enqueue-batch') throw new Error('beanstalkd has no call that puts many jobs');
  if (args.phase === 'drain') {
    // In both shapes a connection per job in flight: reserve blocks its connection until a job
    // is ready, so beanstalkd's workers (and jackd's documentation) take jobs one connection at
    // a time. Exactly M reserves are sent for the M jobs the queue holds.
    const workers = [];
    for (let i = 0; i < args.concurrency; i++) workers.push(await consumer(i === 0 ? first : await open()));
    let acked = 0;
    return {
      server,
      run: () =>
        Promise.all(
          workers.map(async (client) => {
            while (take(1) > 0) {
              await reserveAndDelete(client);
              progress = `${++acked} of ${args.jobs} jobs deleted`;
            }
          }),
        ),
      close: async () => {
        const tube = await first.statsTube(args.queue).catch(() => '');
        const ready = Number(/current-jobs-ready: (\d+)/.exec(tube)?.[1] ?? 0);
        const reserved = Number(/current-jobs-reserved: (\d+)/.exec(tube)?.[1] ?? 0);
        await close();
        if (ready + reserved !== 0) throw new Error(`${ready} ready and ${reserved} reserved jobs left after the drain`);
      },
    };
  }
  if (args.phase === 'latency') {
    await first.use(args.queue);
    await consumer(first);
    let times;
    return {
      server,
      run: async () => {
        times = await roundTrips(args.jobs, async () => {
          await put(first);
          await reserveAndDelete(first);
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
  beanstalkd: [beanstalkd, 'jackd'],
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
