import { describe, expect, it } from 'vitest'
import generated from './schema.json'
import { KNOWN_KEYWORDS, MalformedAnswer, type Schema, answer, conforming, formatPath, listOf, validate } from './validate'
import type { ClusterInfo, Job, JobPage, Overview, Queue, Session, WorkerList } from './types'

const rates = () => ({ enqueued: 1.5, acked: 1, nacked: 0, dead_lettered: 0 })
const totals = () => ({ enqueued: 10, reserved: 9, acked: 8, nacked: 1, dead_lettered: 0 })
const depths = () => ({ ready: 1, scheduled: 0, inflight: 1, dead_lettered: 0 })

/** A well-formed `GET /overview` answer, as the server sends it. */
function overview(): Record<string, unknown> {
  return {
    server: {
      version: '0.2.0', started_at_ms: 1, now_ms: 2, strict_queues: false, dead_letter_retention_ms: 86400000,
      command_queue_len: 0,
    },
    frame: {
      seq: 3, ts_ms: 2, server: { command_queue_len: 0 },
      queues: { counted: { ...depths(), totals: totals(), rates: rates(), paused: false } },
      queue_count: 1, truncated: false,
      total: { ...depths(), totals: totals(), rates: rates() },
    },
    history: {
      queues: { counted: [{ ts_ms: 1, ...rates() }] },
      other: [],
      total: [{ ts_ms: 1, ...rates() }, { ts_ms: 2, ...rates() }],
    },
    history_info: { budget_bytes: 1, bytes: 1, seconds: 2, queues_tracked: 1, queues_folded: 0 },
  }
}

function job(): Record<string, unknown> {
  return {
    id: 'j1', key_b64: 'AA==', job_type: 'email', priority: 0, attempt: 1, max_attempts: 3, enqueued_at_ms: 5,
    custom: { tenant: 'acme', tries: 2, ratio: 0.5, vip: true },
    payload: { encoding: 'json', size_bytes: 2 },
  }
}

/** The message a check throws for `value`, or '' when it passes. */
function failure(check: (value: unknown, what: string) => unknown, value: unknown, what = 'GET /x'): string {
  try {
    check(value, what)
    return ''
  } catch (err) {
    expect(err).toBeInstanceOf(MalformedAnswer)
    return (err as Error).message
  }
}

const overviewCheck = answer<Overview>('Overview')

describe('answer checks against the generated schema', () => {
  it('passes a well-formed answer through, unknown fields at any depth included', () => {
    const value = overview()
    expect(overviewCheck(value, 'GET /overview')).toBe(value)
    const newer = overview() as { frame: { queues: { counted: Record<string, unknown> } }; added: unknown }
    newer.added = { anything: [1] }
    newer.frame.queues.counted.added = 'a newer server field'
    expect(failure(overviewCheck, newer)).toBe('')
  })

  it('names the call and the JSON path of the first bad field, however deep', () => {
    const value = overview() as { frame: { queues: { counted: { totals: Record<string, unknown> } } } }
    value.frame.queues.counted.totals.enqueued = '10'
    expect(failure(overviewCheck, value, 'GET /overview')).toBe(
      'malformed answer from GET /overview: frame.queues.counted.totals.enqueued should be integer, got string',
    )
    try {
      overviewCheck(value, 'GET /overview')
    } catch (err) {
      expect((err as MalformedAnswer).call).toBe('GET /overview')
      expect((err as MalformedAnswer).path).toBe('frame.queues.counted.totals.enqueued')
    }
  })

  it('finds a missing required field and an integer that is not one', () => {
    const missing = overview() as { frame: Record<string, unknown> }
    delete missing.frame.seq
    expect(failure(overviewCheck, missing)).toBe('malformed answer from GET /x: frame.seq is missing')
    const fraction = overview() as { history_info: Record<string, unknown> }
    fraction.history_info.bytes = 1.5
    expect(failure(overviewCheck, fraction)).toContain('history_info.bytes should be integer, got number')
    const negative = overview() as { server: Record<string, unknown> }
    negative.server.command_queue_len = -1
    expect(failure(overviewCheck, negative)).toContain('server.command_queue_len should be at least 0, got -1')
  })

  it('lets an optional field be absent, and checks it when present', () => {
    const value = overview() as { frame: Record<string, unknown>; history?: unknown }
    delete value.history
    delete value.frame.total
    delete value.frame.queue_count
    delete value.frame.truncated
    expect(failure(overviewCheck, value)).toBe('')
    value.frame.truncated = 'yes'
    expect(failure(overviewCheck, value)).toContain('frame.truncated should be boolean or null, got string')
    value.frame.truncated = true
    value.frame.total = { ...depths(), totals: totals() }
    expect(failure(overviewCheck, value)).toContain('frame.total.rates is missing')
  })

  it('takes null for an Option and nothing else that does not fit', () => {
    const session = answer<Session>('Session')
    expect(failure(session, { name: null, role: 'admin', auth_enabled: false })).toBe('')
    expect(failure(session, { name: 7, role: 'admin', auth_enabled: true })).toContain(
      'name should be string or null, got integer',
    )
    expect(failure(session, { role: 'admin', auth_enabled: true })).toContain('name is missing')
    const queue = answer<Queue>('Queue')
    const limits = Object.fromEntries(
      Object.keys(generated.$defs.QueueLimits.properties).map((field) => [field, null]),
    )
    const value: Record<string, unknown> = {
      name: 'q', declared: true, depths: depths(), overrides: { name: 'q', ...limits, max_in_flight: 4 },
      effective: { ...limits, retry_backoff: 'exponential' }, paused: null, held_by_key_limit: 0,
    }
    expect(failure(queue, value)).toBe('')
    value.paused = { until_ms: null, all_queues: true }
    expect(failure(queue, value)).toBe('')
    value.paused = { until_ms: 'soon', all_queues: true }
    expect(failure(queue, value)).toContain('paused.until_ms should be integer or null, got string')
    value.paused = 3
    expect(failure(queue, value)).toContain('paused should be object or null, got integer')
    value.paused = null
    value.overrides = { name: 'q', ...limits, retry_backoff: 'linear' }
    expect(failure(queue, value)).toContain(
      'overrides.retry_backoff should be one of "none", "exponential" or null, got "linear"',
    )
  })

  it('checks enums and constants', () => {
    const session = answer<Session>('Session')
    expect(failure(session, { name: 'x', role: 'root', auth_enabled: true })).toContain(
      'role should be one of "viewer", "operator", "admin", got "root"',
    )
    const cluster = answer<ClusterInfo>('ClusterInfo')
    expect(failure(cluster, { enabled: false })).toBe('')
    const node = {
      enabled: true, node_id: 1, role: 'leader', serving: true, term: 2, leader_id: 1, leader_addr: null,
      last_applied_index: 3, last_log_index: 3, snapshot_index: null,
      members: [{ id: 1, addr: 'a', raft_addr: null, voter: true, leader: true, replication_lag: 0 }],
    }
    expect(failure(cluster, node)).toBe('')
    // `enabled: true` alone fits neither; the disabled alternative's constant differs, so the
    // node alternative's problem is named.
    expect(failure(cluster, { enabled: true })).toContain('node_id is missing')
    expect(failure(cluster, { ...node, enabled: false })).toBe('')
    expect(failure(cluster, { enabled: 'no' })).toContain('enabled should be boolean, got string')
    expect(failure(cluster, { ...node, members: [{ ...node.members[0], voter: 'yes' }] })).toContain(
      'members[0].voter should be boolean, got string',
    )
  })

  it('checks every element of a list', () => {
    const page = answer<JobPage>('JobPage')
    const bad = job() as { payload: Record<string, unknown> }
    bad.payload.size_bytes = null
    expect(failure(page, { jobs: [job(), job()], next_cursor: null, truncated: false })).toBe('')
    expect(failure(page, { jobs: [job(), bad], next_cursor: null, truncated: false })).toContain(
      'jobs[1].payload.size_bytes should be integer, got null',
    )
    const queues = listOf<Queue>('Queue')
    expect(failure(queues, [])).toBe('')
    expect(failure(queues, [{ name: 'q' }], 'GET /queues')).toBe('malformed answer from GET /queues: [0].declared is missing')
    expect(failure(queues, {}, 'GET /queues')).toBe('malformed answer from GET /queues: the answer should be array, got object')
  })

  it('checks every value of a map', () => {
    const jobCheck = answer<Job>('Job')
    expect(failure(jobCheck, job())).toBe('')
    expect(failure(jobCheck, { ...job(), custom: { 'odd key': [1] } })).toContain(
      'custom["odd key"] should be string or integer or number or boolean, got array',
    )
    const workers = answer<WorkerList>('WorkerList')
    const worker = {
      worker_id: 'w', last_seen_ms: 1, reserves: 2, jobs_delivered: 2, held: { emails: 1 }, held_total: 1,
      next_lease_expires_at_ms: null,
    }
    expect(failure(workers, { workers: [worker] })).toBe('')
    expect(failure(workers, { workers: [{ ...worker, held: { emails: 1, 'pdf.render': 0.5 } }] })).toContain(
      'workers[0].held["pdf.render"] should be integer, got number',
    )
  })

  it('refuses an answer that is not an object', () => {
    expect(failure(overviewCheck, null)).toBe('malformed answer from GET /x: the answer should be object, got null')
    expect(failure(overviewCheck, undefined)).toContain('the answer should be object, got undefined')
  })
})

describe('the schema walker', () => {
  const defs: Record<string, Schema> = {
    Point: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'], additionalProperties: false },
  }

  it('accepts fields a schema does not name, even under additionalProperties: false', () => {
    expect(validate({ $ref: '#/$defs/Point' }, { x: 1, y: 'new' }, defs)).toBeNull()
  })

  it('takes oneOf as anyOf, and needs every part of allOf', () => {
    const either: Schema = { oneOf: [{ const: 'a' }, { const: 'b' }] }
    expect(validate(either, 'b', defs)).toBeNull()
    expect(validate(either, 'c', defs)).toEqual({ path: [], expected: '"a" or "b"', got: '"c"', keyword: 'anyOf' })
    const both: Schema = { allOf: [{ $ref: '#/$defs/Point' }, { properties: { y: { type: 'string' } } }] }
    expect(validate(both, { x: 1, y: 'z' }, defs)).toBeNull()
    expect(validate(both, { x: 1, y: 2 }, defs)).toEqual({ path: ['y'], expected: 'string', got: 'integer', keyword: 'type' })
  })

  it('takes true as anything and false as nothing', () => {
    expect(validate(true, Symbol.iterator, defs)).toBeNull()
    expect(validate(false, 1, defs)).toEqual({ path: [], expected: 'nothing', got: 'integer', keyword: 'false' })
  })

  it('refuses a $ref the schema does not define', () => {
    expect(() => validate({ $ref: '#/$defs/Nope' }, 1, defs)).toThrow('schema has no definition for #/$defs/Nope')
    expect(() => conforming({ $ref: '#/$defs/Nope' })(1, 'GET /x')).toThrow('no definition')
  })

  it('writes paths as JavaScript would', () => {
    expect(formatPath([])).toBe('')
    expect(formatPath(['frame', 'queues', 'a.b', 'totals', 'enqueued'])).toBe('frame.queues["a.b"].totals.enqueued')
    expect(formatPath([2, 'x', 0])).toBe('[2].x[0]')
  })

  it('knows every keyword schema.json uses', () => {
    const used = new Set<string>()
    const walk = (schema: unknown): void => {
      if (typeof schema !== 'object' || schema === null) return
      for (const [keyword, inner] of Object.entries(schema)) {
        used.add(keyword)
        if (keyword === 'properties') Object.values(inner as object).forEach(walk)
        else if (keyword === 'anyOf' || keyword === 'oneOf' || keyword === 'allOf') (inner as unknown[]).forEach(walk)
        else if (keyword === 'items' || keyword === 'additionalProperties') walk(inner)
      }
    }
    Object.values(generated.$defs).forEach(walk)
    expect([...used].filter((keyword) => !KNOWN_KEYWORDS.includes(keyword))).toEqual([])
    expect(used.has('$ref') && used.has('anyOf') && used.has('enum') && used.has('const')).toBe(true)
  })
})
