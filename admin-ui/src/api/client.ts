/**
 * The admin HTTP API client: the only module that knows endpoint paths, methods and the error
 * envelope. Every call goes to the same origin under /admin/api/v1 and authenticates with the
 * session cookie the login sets.
 */
import type {
  AuditPage, AuditQuery, ConfigChange, ConfigView, EnqueueRequest, Job, JobPage, JobState,
  ClusterInfo, LoginResult, Overview, Queue, QueueHistory, QueueLimits, Rejection, ScheduleBody, ScheduleInfo, ServerInfo, Session, WorkerInfo, WriteResult, BulkActionName, CustomValue,
} from './types'
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

async function call<T>(method: Method, path: string, options: CallOptions = {}): Promise<T> {
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
  return (text ? JSON.parse(text) : undefined) as T
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
  session: () => call<Session>('GET', '/session'),
  login: (name: string, key: string) => call<LoginResult>('POST', '/session', { body: { name, key } }),
  logout: () => call<void>('DELETE', '/session'),

  overview: (history: boolean) =>
    call<Overview>('GET', '/overview', { query: history ? undefined : { history: false } }),
  serverInfo: () => call<ServerInfo>('GET', '/server-info'),
  /** This node's view of the cluster; `{enabled: false}` on a single node. */
  cluster: () => call<ClusterInfo>('GET', '/cluster'),

  queues: () => call<Queue[]>('GET', '/queues'),
  queue: (name: string) => call<Queue>('GET', `/queues/${seg(name)}`),
  queueHistory: (name: string) => call<QueueHistory>('GET', `/queues/${seg(name)}/history`),
  putQueue: (name: string, etag: string, overrides: Partial<QueueLimits>) =>
    call<WriteResult>('PUT', `/queues/${seg(name)}`, { body: { etag, overrides } }),
  deleteQueue: (name: string, etag: string, purge: boolean) =>
    call<{ purged: number; etag: string }>('DELETE', `/queues/${seg(name)}`, {
      ifMatch: etag,
      query: purge ? { purge: true } : undefined,
    }),

  cancelJob: (id: string, reason: string | undefined) =>
    call<{ job_id: string; outcome: 'removed' | 'lease_cancelled' | 'already_cancelled' }>('POST', `/jobs/${seg(id)}/cancel`, {
      body: reason ? { reason } : {},
    }),

  pauseQueue: (name: string, untilMs: number | null) =>
    call<{ queue: string; paused: boolean; until_ms: number | null }>('POST', `/queues/${seg(name)}/pause`, {
      body: untilMs === null ? {} : { until_ms: untilMs },
    }),
  resumeQueue: (name: string) =>
    call<{ queue: string; resumed: boolean }>('POST', `/queues/${seg(name)}/resume`, { body: {} }),
  resumeAll: () => call<{ all_queues: boolean; resumed: boolean }>('POST', '/queues:resume', { body: {} }),

  peek: (queue: string, params: PeekParams) =>
    call<JobPage>('GET', `/queues/${seg(queue)}/jobs`, {
      query: { state: params.state, cursor: params.cursor, limit: params.limit, ...filterQuery(params.filter) },
    }),
  enqueue: (queue: string, request: EnqueueRequest) =>
    call<{ job_id: string }>('POST', `/queues/${seg(queue)}/jobs`, { body: request }),
  job: (id: string) => call<Job & { queue: string; state: JobState }>('GET', `/jobs/${seg(id)}`),
  deadLetter: (queue: string, keyB64: string) =>
    call<Job>('GET', `/queues/${seg(queue)}/dead-letters/${seg(keyB64)}`),

  deadLetterJobs: (queue: string, state: 'ready' | 'scheduled', action: KeysAction) =>
    call<{ dead_lettered: number; missing: number }>('POST', `/queues/${seg(queue)}/jobs:dead-letter`, {
      body: { state, ...action },
    }),
  requeueDeadLetters: (queue: string, action: KeysAction) =>
    call<{ requeued: number; missing: number }>('POST', `/queues/${seg(queue)}/dead-letters:requeue`, {
      body: action,
    }),
  deleteDeadLetters: (queue: string, action: KeysAction) =>
    call<{ deleted: number; missing: number }>('POST', `/queues/${seg(queue)}/dead-letters:delete`, {
      body: action,
    }),

  /** How many of the queue's jobs in `state` match `filter` (all of them without one). */
  countJobs: (queue: string, state: JobState, filter?: JobFilter) =>
    call<{ count: number }>('GET', `/queues/${seg(queue)}/jobs:count`, { query: { state, ...filterQuery(filter) } }),
  /** Applies an action to every job in `state` matching `filter`; `dryRun` only counts them. */
  bulk: (queue: string, request: { state: JobState; action: BulkActionName; filter: JobFilter; reason?: string }) =>
    call<{ affected: number }>('POST', `/queues/${seg(queue)}/jobs:bulk`, { body: bulkBody(request, false) }),
  bulkPreview: (queue: string, request: { state: JobState; action: BulkActionName; filter: JobFilter }) =>
    call<{ matched: number }>('POST', `/queues/${seg(queue)}/jobs:bulk`, { body: bulkBody(request, true) }),

  audit: (query: AuditQuery) => call<AuditPage>('GET', '/audit', { query: { ...query } }),

  config: () => call<ConfigView>('GET', '/config'),
  putConfig: (etag: string, changes: ConfigChange[]) =>
    call<WriteResult>('PUT', '/config', { body: { etag, changes } }),
  addApiKey: (etag: string, name: string, key: string) =>
    call<WriteResult>('POST', '/auth/keys', { body: { etag, name, key } }),
  revokeApiKey: (etag: string, name: string) =>
    call<WriteResult>('DELETE', `/auth/keys/${seg(name)}`, { ifMatch: etag }),
  disableApiKeys: (etag: string) => call<WriteResult>('DELETE', '/auth/keys', { ifMatch: etag }),

  workers: () => call<{ workers: WorkerInfo[] }>('GET', '/workers'),
  schedules: () => call<{ schedules: ScheduleInfo[] }>('GET', '/schedules'),
  putSchedule: (id: string, body: ScheduleBody) => call<ScheduleInfo>('PUT', `/schedules/${seg(id)}`, { body }),
  deleteSchedule: (id: string) => call<{ id: string; deleted: boolean }>('DELETE', `/schedules/${seg(id)}`),

  /** The URL of the live event stream (Server-Sent Events). */
  eventsUrl: () => buildUrl('/events'),
}
