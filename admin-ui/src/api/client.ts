/**
 * The admin HTTP API client: the only module that knows endpoint paths, methods and the error
 * envelope. Every call goes to the same origin under /admin/api/v1 and authenticates with the
 * session cookie the login sets.
 */
import type {
  AuditPage, AuditQuery, ConfigChange, ConfigView, EnqueueRequest, Job, JobPage, JobState,
  ClusterInfo, LoginResult, Overview, Queue, QueueHistory, QueueLimits, Rejection, ScheduleBody, ScheduleInfo, ServerInfo, Session, WriteResult, BulkActionName, CustomValue,
  BulkAffected, BulkMatched, CancelResult, DeadLetteredResult, DeletedResult, Enqueued, JobCount, PauseResult,
  QueueDeleted, RequeuedResult, ResumeResult, ScheduleDeleted, ScheduleList, WorkerList, AuditEntry, Frame, Hello,
} from './types'
import { type Check, MalformedAnswer, answer, anything, listOf } from './validate'
import { filterToQuery, type JobFilter } from '../lib/filters'

const BASE = '/admin/api/v1'

/** A failed API call: the HTTP status, the envelope's code and text, and a rejection if any. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly rejection: Rejection | null
  /** On a node that does not serve (code `not_leader`): the leader's client address, if known. */
  readonly leaderAddr: string | null

  constructor(status: number, code: string, message: string, rejection: Rejection | null, leaderAddr: string | null = null) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.rejection = rejection
    this.leaderAddr = leaderAddr
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE'

interface CallOptions {
  body?: unknown
  ifMatch?: string
  query?: Record<string, string | number | boolean | undefined>
}

/** Listeners told when any call answers 401, so the app can send the user to the login page. */
const unauthorizedListeners = new Set<() => void>()

export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener)
  return () => unauthorizedListeners.delete(listener)
}

/** Listeners told when a call answers 503 `not_leader`: this node of a cluster does not serve. */
const notLeaderListeners = new Set<(error: ApiError) => void>()

export function onNotLeader(listener: (error: ApiError) => void): () => void {
  notLeaderListeners.add(listener)
  return () => notLeaderListeners.delete(listener)
}

function seg(part: string): string {
  return encodeURIComponent(part)
}

function buildUrl(path: string, query?: CallOptions['query']): string {
  let url = BASE + path
  if (query) {
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== '') params.append(k, String(v))
    }
    const text = params.toString()
    if (text) url += '?' + text
  }
  return url
}

async function errorFrom(response: Response): Promise<ApiError> {
  const text = await response.text()
  try {
    const body = JSON.parse(text) as { error?: string; code?: string; rejection?: Rejection; leader_addr?: string }
    if (typeof body.error === 'string') {
      const leader = typeof body.leader_addr === 'string' && body.leader_addr ? body.leader_addr : null
      return new ApiError(response.status, body.code ?? 'unknown', body.error, body.rejection ?? null, leader)
    }
  } catch {
    // Not the JSON envelope: the framework answered in plain text.
  }
  const message = text.trim() || `${response.status} ${response.statusText}`
  return new ApiError(response.status, 'http_' + response.status, message, null)
}

/**
 * The check of each answer: the whole answer, nested fields included, against its type in
 * schema.json (see validate.ts).
 */
export const checks = {
  session: answer<Session>('Session'),
  login: answer<LoginResult>('LoginResult'),
  overview: answer<Overview>('Overview'),
  serverInfo: answer<ServerInfo>('ServerInfo'),
  cluster: answer<ClusterInfo>('ClusterInfo'),
  queues: listOf<Queue>('Queue'),
  queue: answer<Queue>('Queue'),
  queueHistory: answer<QueueHistory>('QueueHistory'),
  writeResult: answer<WriteResult>('WriteResult'),
  queueDeleted: answer<QueueDeleted>('QueueDeleted'),
  cancel: answer<CancelResult>('CancelResult'),
  pause: answer<PauseResult>('PauseResult'),
  resume: answer<ResumeResult>('ResumeResult'),
  jobPage: answer<JobPage>('JobPage'),
  enqueued: answer<Enqueued>('Enqueued'),
  job: answer<Job>('Job'),
  deadLettered: answer<DeadLetteredResult>('DeadLetteredResult'),
  requeued: answer<RequeuedResult>('RequeuedResult'),
  deleted: answer<DeletedResult>('DeletedResult'),
  count: answer<JobCount>('JobCount'),
  affected: answer<BulkAffected>('BulkAffected'),
  matched: answer<BulkMatched>('BulkMatched'),
  audit: answer<AuditPage>('AuditPage'),
  config: answer<ConfigView>('ConfigView'),
  workers: answer<WorkerList>('WorkerList'),
  schedules: answer<ScheduleList>('ScheduleList'),
  schedule: answer<ScheduleInfo>('ScheduleInfo'),
  scheduleDeleted: answer<ScheduleDeleted>('ScheduleDeleted'),
}

/** The check of each event of the live stream (`api.eventsUrl()`) that carries JSON. */
export const eventChecks = {
  hello: answer<Hello>('Hello'),
  stats: answer<Frame>('Frame'),
  audit: answer<AuditEntry>('AuditEntry'),
}

async function call<T>(method: Method, path: string, check: Check<T>, options: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' }
  if (options.body !== undefined) headers['Content-Type'] = 'application/json'
  if (options.ifMatch !== undefined) headers['If-Match'] = options.ifMatch
  let response: Response
  try {
    response = await fetch(buildUrl(path, options.query), {
      method,
      headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    })
  } catch (err) {
    throw new ApiError(0, 'network', `cannot reach the server (${(err as Error).message})`, null)
  }
  if (!response.ok) {
    const error = await errorFrom(response)
    if (response.status === 401 && path !== '/session') unauthorizedListeners.forEach((l) => l())
    if (response.status === 503 && error.code === 'not_leader') notLeaderListeners.forEach((l) => l(error))
    throw error
  }
  if (response.status === 204) return undefined as T
  const text = await response.text()
  try {
    return check(text ? JSON.parse(text) : undefined, `${method} ${path}`)
  } catch (err) {
    // A server and UI that disagree: say so in the console too, whatever the view shows.
    if (err instanceof MalformedAnswer) console.error(err.message)
    throw err
  }
}

function filterQuery(filter?: JobFilter): Record<string, string> {
  return filter ? filterToQuery(filter) : {}
}

function bulkBody(
  request: { state: JobState; action: BulkActionName; filter: JobFilter; reason?: string },
  dryRun: boolean,
): Record<string, unknown> {
  const custom: Record<string, CustomValue> = {}
  for (const c of request.filter.custom) custom[c.key] = c.value
  return {
    state: request.state,
    action: request.action,
    job_type: request.filter.jobType || undefined,
    custom: request.filter.custom.length ? custom : undefined,
    reason: request.reason || undefined,
    dry_run: dryRun,
  }
}

export interface PeekParams {
  state: JobState
  cursor?: string
  limit?: number
  filter?: JobFilter
}

export interface KeysAction {
  keys_b64: string[]
  reason?: string
}

/** The most keys one bulk call may name; larger selections are sent in several calls. */
export const MAX_KEYS_PER_CALL = 100

export const api = {
  session: () => call('GET', '/session', checks.session),
  login: (name: string, key: string) => call('POST', '/session', checks.login, { body: { name, key } }),
  logout: () => call('DELETE', '/session', anything<void>()),

  overview: (history: boolean) =>
    call('GET', '/overview', checks.overview, { query: history ? undefined : { history: false } }),
  serverInfo: () => call('GET', '/server-info', checks.serverInfo),
  /** This node's view of the cluster; `{enabled: false}` on a single node. */
  cluster: () => call('GET', '/cluster', checks.cluster),

  queues: () => call('GET', '/queues', checks.queues),
  queue: (name: string) => call('GET', `/queues/${seg(name)}`, checks.queue),
  queueHistory: (name: string) => call('GET', `/queues/${seg(name)}/history`, checks.queueHistory),
  putQueue: (name: string, etag: string, overrides: Partial<QueueLimits>) =>
    call('PUT', `/queues/${seg(name)}`, checks.writeResult, { body: { etag, overrides } }),
  deleteQueue: (name: string, etag: string, purge: boolean) =>
    call('DELETE', `/queues/${seg(name)}`, checks.queueDeleted, {
      ifMatch: etag,
      query: purge ? { purge: true } : undefined,
    }),

  cancelJob: (id: string, reason: string | undefined) =>
    call('POST', `/jobs/${seg(id)}/cancel`, checks.cancel, {
      body: reason ? { reason } : {},
    }),

  pauseQueue: (name: string, untilMs: number | null) =>
    call('POST', `/queues/${seg(name)}/pause`, checks.pause, {
      body: untilMs === null ? {} : { until_ms: untilMs },
    }),
  resumeQueue: (name: string) =>
    call('POST', `/queues/${seg(name)}/resume`, checks.resume, { body: {} }),
  resumeAll: () => call('POST', '/queues:resume', checks.resume, { body: {} }),

  peek: (queue: string, params: PeekParams) =>
    call('GET', `/queues/${seg(queue)}/jobs`, checks.jobPage, {
      query: { state: params.state, cursor: params.cursor, limit: params.limit, ...filterQuery(params.filter) },
    }),
  enqueue: (queue: string, request: EnqueueRequest) =>
    call('POST', `/queues/${seg(queue)}/jobs`, checks.enqueued, { body: request }),
  job: (id: string) => call('GET', `/jobs/${seg(id)}`, checks.job) as Promise<Job & { queue: string; state: JobState }>,
  deadLetter: (queue: string, keyB64: string) =>
    call('GET', `/queues/${seg(queue)}/dead-letters/${seg(keyB64)}`, checks.job),

  deadLetterJobs: (queue: string, state: 'ready' | 'scheduled', action: KeysAction) =>
    call('POST', `/queues/${seg(queue)}/jobs:dead-letter`, checks.deadLettered, {
      body: { state, ...action },
    }),
  requeueDeadLetters: (queue: string, action: KeysAction) =>
    call('POST', `/queues/${seg(queue)}/dead-letters:requeue`, checks.requeued, {
      body: action,
    }),
  deleteDeadLetters: (queue: string, action: KeysAction) =>
    call('POST', `/queues/${seg(queue)}/dead-letters:delete`, checks.deleted, {
      body: action,
    }),

  /** How many of the queue's jobs in `state` match `filter` (all of them without one). */
  countJobs: (queue: string, state: JobState, filter?: JobFilter) =>
    call('GET', `/queues/${seg(queue)}/jobs:count`, checks.count, { query: { state, ...filterQuery(filter) } }),
  /** Applies an action to every job in `state` matching `filter`; `dryRun` only counts them. */
  bulk: (queue: string, request: { state: JobState; action: BulkActionName; filter: JobFilter; reason?: string }) =>
    call('POST', `/queues/${seg(queue)}/jobs:bulk`, checks.affected, { body: bulkBody(request, false) }),
  bulkPreview: (queue: string, request: { state: JobState; action: BulkActionName; filter: JobFilter }) =>
    call('POST', `/queues/${seg(queue)}/jobs:bulk`, checks.matched, { body: bulkBody(request, true) }),

  audit: (query: AuditQuery) => call('GET', '/audit', checks.audit, { query: { ...query } }),

  config: () => call('GET', '/config', checks.config),
  putConfig: (etag: string, changes: ConfigChange[]) =>
    call('PUT', '/config', checks.writeResult, { body: { etag, changes } }),
  addApiKey: (etag: string, name: string, key: string) =>
    call('POST', '/auth/keys', checks.writeResult, { body: { etag, name, key } }),
  revokeApiKey: (etag: string, name: string) =>
    call('DELETE', `/auth/keys/${seg(name)}`, checks.writeResult, { ifMatch: etag }),
  disableApiKeys: (etag: string) => call('DELETE', '/auth/keys', checks.writeResult, { ifMatch: etag }),

  workers: () => call('GET', '/workers', checks.workers),
  schedules: () => call('GET', '/schedules', checks.schedules),
  putSchedule: (id: string, body: ScheduleBody) => call('PUT', `/schedules/${seg(id)}`, checks.schedule, { body }),
  deleteSchedule: (id: string) => call('DELETE', `/schedules/${seg(id)}`, checks.scheduleDeleted),

  /** The URL of the live event stream (Server-Sent Events). */
  eventsUrl: () => buildUrl('/events'),
}
