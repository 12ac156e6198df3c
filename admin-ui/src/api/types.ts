/**
 * The shapes the admin HTTP API sends and accepts, as the UI uses them.
 * Field names are the wire names (snake_case); nothing here knows a URL.
 */

export type Role = 'viewer' | 'operator' | 'admin'

export interface Session {
  /** The key's name; null when authentication is off. */
  name: string | null
  role: Role
  auth_enabled: boolean
}

export interface LoginResult {
  name: string
  role: Role
  expires_at_ms: number
}

export interface Totals {
  enqueued: number
  reserved: number
  acked: number
  nacked: number
  dead_lettered: number
}

export interface Rates {
  enqueued: number
  acked: number
  nacked: number
  dead_lettered: number
}

export interface Depths {
  ready: number
  scheduled: number
  inflight: number
  dead_lettered: number
}

export interface QueueFrame extends Depths {
  totals: Totals
  rates: Rates
  /** Ready jobs that wait because their key is at its `key_max_in_flight`. */
  held_by_key_limit?: number
  /** Reserves skip the queue (paused by name, or with every queue). */
  paused: boolean
}

/** Every queue summed: depths, totals since boot and per-second rates. */
export interface FrameTotal extends Depths {
  totals: Totals
  rates: Rates
  held_by_key_limit?: number
}

/** One tick of live statistics: the busiest queues (at most 500) and the sum over every queue. */
export interface Frame {
  seq: number
  ts_ms: number
  server: { command_queue_len: number }
  queues: Record<string, QueueFrame>
  /** How many queues there are; `truncated` when `queues` holds only the busiest of them. */
  queue_count?: number
  truncated?: boolean
  total?: FrameTotal
}

/** One point of a history series: per-second rates at `ts_ms` (a mean over a span of seconds in long series). */
export interface HistorySample extends Rates {
  ts_ms: number
}

/** The history the overview and `hello` carry: the busiest queues' series (last 5 minutes), the
 *  folded queues summed (`other`, same span) and every queue summed (`total`, the whole ring). */
export interface History {
  queues: Record<string, HistorySample[]>
  other: HistorySample[]
  total: HistorySample[]
}

export interface HistoryInfo {
  budget_bytes: number
  bytes: number
  seconds: number
  queues_tracked: number
  queues_folded: number
}

/** `GET /queues/{name}/history`: the queue's own series, empty when it is folded into `other`. */
export interface QueueHistory {
  name: string
  tracked: boolean
  seconds: number
  samples: HistorySample[]
}

export interface ServerSummary {
  version: string
  started_at_ms: number
  now_ms: number
  strict_queues: boolean
  dead_letter_retention_ms: number
  command_queue_len: number
}

export interface Overview {
  server: ServerSummary
  frame: Frame
  history?: History
  history_info?: HistoryInfo
}

export interface ServerInfo {
  version: string
  started_at_ms: number
  listen_addr: string
  tls: boolean
  auth_enforcing: boolean
  strict_queues: boolean
  db_path: string
}

export type RetryBackoff = 'none' | 'exponential'

/** The per-queue limits a `[[queues]]` entry may set (all optional there). */
export interface QueueLimits {
  max_lease_duration_ms: number | null
  default_max_attempts: number | null
  max_attempts_ceiling: number | null
  default_priority: number | null
  retry_delay_ms: number | null
  retry_backoff: RetryBackoff | null
  retry_delay_max_ms: number | null
  max_payload_bytes: number | null
  allowed_encodings: string[] | null
  allowed_job_types: string[] | null
  max_schedule_horizon_ms: number | null
  max_custom_entries: number | null
  max_custom_total_bytes: number | null
  max_custom_key_bytes: number | null
  dedup_window_ms: number | null
  max_queue_depth: number | null
  max_in_flight: number | null
  rate_limit: number | null
  rate_period_ms: number | null
  rate_burst: number | null
  limit_key: string | null
  key_max_in_flight: number | null
  key_rate_limit: number | null
  key_rate_period_ms: number | null
  key_rate_burst: number | null
  key_overrides: Record<string, KeyOverride> | null
}

/** The limits of one value of a queue's `limit_key` (unset: the queue's `key_*` default). */
export interface KeyOverride {
  max_in_flight?: number | null
  rate_limit?: number | null
  rate_burst?: number | null
}

export type QueueField = keyof QueueLimits

export interface Queue {
  name: string
  declared: boolean
  depths: Depths
  /** The queue's `[[queues]]` entry (unset fields null), or null when it is not declared. */
  overrides: (QueueLimits & { name: string }) | null
  effective: QueueLimits
  /** Null unless reserves skip the queue; `all_queues` when only the pause of every queue holds it. */
  paused: QueuePause | null
  /** Ready jobs that wait because their key is at its `key_max_in_flight`. */
  held_by_key_limit: number
}

export interface QueuePause {
  /** When the pause ends by itself; null: until resumed. */
  until_ms: number | null
  all_queues: boolean
}

export type JobState = 'ready' | 'scheduled' | 'inflight' | 'dead_letter'

export type CustomValue = string | number | boolean

export interface Payload {
  encoding: string
  size_bytes: number
  /** Present in detail views, and in listings for payloads up to 4 KiB. */
  data_b64?: string
}

export type DeadLetterCause = 'attempts_exhausted' | 'rejected' | 'lease_expired' | 'admin' | 'cancelled' | 'unspecified'

export interface Job {
  id: string
  key_b64: string
  job_type: string
  priority: number
  attempt: number
  max_attempts: number
  enqueued_at_ms: number
  custom: Record<string, CustomValue>
  payload: Payload
  scheduled_at_ms?: number
  /** When a scheduled job (or a delayed retry) becomes ready. */
  due_at_ms?: number
  /** In flight under a lease that was cancelled: its worker learns it at its next extend, ack or nack. */
  cancelled?: boolean
  lease_expires_at_ms?: number
  /** Set by the job-by-id lookup. */
  queue?: string
  state?: JobState
  /** Dead letters only. */
  failed_at_ms?: number
  cause?: DeadLetterCause
  last_reason?: string
}

export interface JobPage {
  jobs: Job[]
  next_cursor: string | null
  truncated: boolean
}

export interface EnqueueRequest {
  job_type: string
  payload?: { encoding: string; data_b64?: string; data_text?: string }
  priority?: number
  max_attempts?: number
  scheduled_at_ms?: number
  idempotency_key?: string
  custom?: Record<string, CustomValue>
}

export interface AuditEntry {
  seq: number
  ts_ms: number
  actor: string
  role: Role
  action: string
  details: Record<string, unknown>
}

export interface AuditPage {
  entries: AuditEntry[]
  next_before: number | null
}

export interface AuditQuery {
  before?: number
  limit?: number
  actor?: string
  action_prefix?: string
}

export interface ConfigView {
  effective: Record<string, unknown>
  etag: string
  env_pinned: string[]
  restart_only: string[]
  pending_restart: string[]
}

export type ConfigValue = string | number | boolean | Array<string | number | boolean> | null

export interface ConfigChange {
  path: string
  value: ConfigValue
}

export interface WriteResult {
  applied: boolean
  requires_restart: string[]
  etag: string
}

export interface Rejection {
  reason: string
  detail: string
}

/** A worker id that reserved jobs recently, and what it holds now. */
export interface WorkerInfo {
  worker_id: string
  last_seen_ms: number
  /** Reserve calls seen from it. */
  reserves: number
  jobs_delivered: number
  /** Jobs it holds (in flight) now, per queue. */
  held: Record<string, number>
  held_total: number
  /** The soonest lease among the jobs it holds, if any. */
  next_lease_expires_at_ms: number | null
}

export type BulkActionName = 'requeue' | 'delete' | 'dead_letter'

/** A recurring schedule as the admin API shows it. */
export interface ScheduleInfo {
  id: string
  cron: { expression: string; time_zone: string } | null
  every_ms: number | null
  queue: string
  job_type: string
  payload: { encoding: string; size_bytes: number } | null
  priority: number | null
  max_attempts: number | null
  custom: Record<string, CustomValue>
  overlap: 'skip' | 'allow'
  catch_up: 'latest' | 'none'
  /** Null when a cron expression has no later slot. */
  next_fire_at_ms: number | null
  last_slot_at_ms: number | null
  last_job_id: string | null
  fired: number
  created_at_ms: number
}

/** What `PUT /schedules/{id}` takes. */
export interface ScheduleBody {
  cron?: { expression: string; time_zone?: string }
  every_ms?: number
  queue: string
  job_type: string
  payload?: { encoding: string; data_text: string }
  overlap?: 'skip' | 'allow'
  catch_up?: 'latest' | 'none'
}

/** One member of the cluster as the node asked sees it. */
export interface ClusterMember {
  id: number
  /** Its client (gRPC) address. */
  addr: string
  /** Its cluster (Raft) address; null when this node does not know it. */
  raft_addr: string | null
  /** A voter, else a learner (catching up before it votes). */
  voter: boolean
  leader: boolean
  /** Log entries the member lacks; known on the leader only (null elsewhere). */
  replication_lag: number | null
}

/** `GET /cluster` on a node in cluster mode. */
export interface ClusterNode {
  enabled: true
  node_id: number
  /** `leader`, `follower`, `candidate`, `learner`, ... as the node reports it. */
  role: string
  /** Whether this node's queue serves (the leader, once it is ready). */
  serving: boolean
  term: number
  leader_id: number | null
  /** The leader's client (gRPC) address; its admin address is not known here. */
  leader_addr: string | null
  last_applied_index: number | null
  last_log_index: number | null
  snapshot_index: number | null
  members: ClusterMember[]
}

/** `GET /cluster`: `{enabled: false}` on a single node. */
export type ClusterInfo = { enabled: false } | ClusterNode
