// A small gRPC client for the browser tests: makes real jobs flow through the server under test
// (enqueue, reserve, ack, nack) with @grpc/grpc-js on the project's queue.proto.
import grpc from '@grpc/grpc-js'
import protoLoader from '@grpc/proto-loader'
import { fileURLToPath } from 'node:url'

const PROTO = fileURLToPath(new URL('../../proto/sepp/v1/queue.proto', import.meta.url))

function load() {
  const def = protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true })
  return grpc.loadPackageDefinition(def).sepp.v1.QueueService
}

function promisify(client, method) {
  return (request) => new Promise((resolve, reject) => {
    client[method](request, (err, response) => (err ? reject(err) : resolve(response)))
  })
}

function custom(map = {}) {
  const out = {}
  for (const [k, v] of Object.entries(map)) {
    if (typeof v === 'boolean') out[k] = { bool_value: v }
    else if (typeof v === 'number') out[k] = Number.isInteger(v) ? { int_value: v } : { double_value: v }
    else out[k] = { string_value: String(v) }
  }
  return out
}

function timestamp(ms) {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 }
}

export function connect(addr) {
  const Service = load()
  const client = new Service(addr, grpc.credentials.createInsecure())
  const enqueueBatch = promisify(client, 'EnqueueBatch')
  const reserveCall = promisify(client, 'Reserve')
  const ackCall = promisify(client, 'Ack')
  const nackCall = promisify(client, 'Nack')
  return {
    /**
     * @param {string} queue
     * @param {Array<{job_type?: string, data?: string|Buffer, encoding?: string, custom?: object, priority?: number, scheduled_at_ms?: number, max_attempts?: number}>} jobs
     * @returns {Promise<string[]>} the job ids
     */
    async enqueue(queue, jobs) {
      const ids = []
      for (let i = 0; i < jobs.length; i += 200) {
        const chunk = jobs.slice(i, i + 200).map((j) => ({
          queue,
          job_type: j.job_type ?? 'test',
          payload: { data: Buffer.from(j.data ?? '{}'), encoding: j.encoding ?? 'application/json' },
          custom: custom(j.custom),
          ...(j.priority !== undefined ? { priority: j.priority } : {}),
          ...(j.max_attempts !== undefined ? { max_attempts: j.max_attempts } : {}),
          ...(j.scheduled_at_ms !== undefined ? { scheduled_at: timestamp(j.scheduled_at_ms) } : {}),
        }))
        const response = await enqueueBatch({ jobs: chunk })
        for (const r of response.results) {
          if (!r.success) throw new Error('enqueue rejected: ' + JSON.stringify(r.rejection))
          ids.push(r.success.job_id)
        }
      }
      return ids
    },
    /** Reserves up to `max` jobs (waiting up to 2 s for the first), with a long lease. */
    async reserve(queue, max, workerId = 'e2e-worker') {
      const response = await reserveCall({
        queues: [queue],
        max_jobs: max,
        worker_id: workerId,
        wait_timeout: { seconds: 2, nanos: 0 },
        lease_duration: { seconds: 120, nanos: 0 },
      })
      return response.jobs
    },
    ack: (job) => ackCall({ job_id: job.id, attempt: job.attempt }),
    /** Nacks with the queue's retry policy. */
    nack: (job, reason) => nackCall({ job_id: job.id, attempt: job.attempt, reason, retry: { default: {} } }),
    /** Nacks straight to the dead letters with a reason. */
    deadLetter: (job, reason) => nackCall({ job_id: job.id, attempt: job.attempt, reason, retry: { dead_letter: {} } }),
    close: () => client.close(),
  }
}
