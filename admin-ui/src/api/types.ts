/**
 * The shapes the admin HTTP API sends and accepts, as the UI uses them.
 * Field names are the wire names (snake_case); nothing here knows a URL.
 *
 * Generated from crates/sepp-admin-types by its `types_ts` test: do not edit by hand;
 * change the Rust types and run `SEPP_WRITE_TYPES=1 cargo test -p sepp-admin-types`.
 */

/**
 * The role of an admin key (or of everyone when admin authentication is off).
 */
export type Role = "viewer" | "operator" | "admin";

/**
 * `GET /session`: who the caller is.
 */
export type Session = { 
/**
 * The key's name; null when authentication is off.
 */
name: string | null, role: Role, auth_enabled: boolean, };

/**
 * `POST /session`: the signed-in key.
 */
export type LoginResult = { name: string, role: Role, expires_at_ms: number, };

/**
 * Counts since boot.
 */
export type Totals = { enqueued: number, reserved: number, acked: number, nacked: number, dead_lettered: number, };

/**
 * Per-second rates.
 */
export type Rates = { enqueued: number, acked: number, nacked: number, dead_lettered: number, };

/**
 * How many jobs a queue holds in each state.
 */
export type Depths = { ready: number, scheduled: number, inflight: number, dead_lettered: number, };

/**
 * One queue in a stats frame.
 */
export type QueueFrame = { totals: Totals, rates: Rates, 
/**
 * Ready jobs that wait because their key is at its `key_max_in_flight`.
 */
held_by_key_limit?: number, 
/**
 * Reserves skip the queue (paused by name, or with every queue).
 */
paused: boolean, ready: number, scheduled: number, inflight: number, dead_lettered: number, };

/**
 * Every queue summed: depths, totals since boot and per-second rates.
 */
export type FrameTotal = { totals: Totals, rates: Rates, held_by_key_limit?: number, ready: number, scheduled: number, inflight: number, dead_lettered: number, };

/**
 * The server part of a stats frame.
 */
export type FrameServer = { command_queue_len: number, };

/**
 * One tick of live statistics: the busiest queues (at most 500) and the sum over every queue.
 */
export type Frame = { seq: number, ts_ms: number, server: FrameServer, queues: { [key in string]: QueueFrame }, 
/**
 * How many queues there are; `truncated` when `queues` holds only the busiest of them.
 */
queue_count?: number, truncated?: boolean, 
/**
 * Older servers leave it out (the frame's queues were all of them).
 */
total?: FrameTotal, };

/**
 * One point of a history series: per-second rates at `ts_ms` (a mean over a span of seconds in
 * long series).
 */
export type HistorySample = { ts_ms: number, enqueued: number, acked: number, nacked: number, dead_lettered: number, };

/**
 * The history the overview and `hello` carry: the busiest queues' series (last 5 minutes), the
 * folded queues summed (`other`, same span) and every queue summed (`total`, the whole ring).
 */
export type History = { queues: { [key in string]: Array<HistorySample> }, other: Array<HistorySample>, total: Array<HistorySample>, };

/**
 * The history ring's size and use.
 */
export type HistoryInfo = { budget_bytes: number, bytes: number, seconds: number, queues_tracked: number, queues_folded: number, };

/**
 * `GET /queues/{name}/history`: the queue's own series, empty when it is folded into `other`.
 */
export type QueueHistory = { name: string, tracked: boolean, seconds: number, samples: Array<HistorySample>, };

/**
 * The server facts of `GET /overview`.
 */
export type ServerSummary = { version: string, started_at_ms: number, now_ms: number, strict_queues: boolean, dead_letter_retention_ms: number, command_queue_len: number, };

/**
 * `GET /overview[?history=false]`: `history` is left out with `history=false`.
 */
export type Overview = { server: ServerSummary, frame: Frame, history?: History, history_info: HistoryInfo, };

/**
 * The first event of `GET /events` (`hello`): the history and the latest frame.
 */
export type Hello = { history: History, history_info: HistoryInfo, frame: Frame, };

/**
 * `GET /server-info`.
 */
export type ServerInfo = { version: string, started_at_ms: number, listen_addr: string, tls: boolean, auth_enforcing: boolean, strict_queues: boolean, db_path: string, };

export type RetryBackoff = "none" | "exponential";

/**
 * The per-queue limits a `[[queues]]` entry may set (all optional there); as a queue's
 * `effective` limits, null where there is no limit.
 */
export type QueueLimits = { max_lease_duration_ms: number | null, default_max_attempts: number | null, max_attempts_ceiling: number | null, default_priority: number | null, retry_delay_ms: number | null, retry_backoff: RetryBackoff | null, retry_delay_max_ms: number | null, max_payload_bytes: number | null, allowed_encodings: Array<string> | null, allowed_job_types: Array<string> | null, max_schedule_horizon_ms: number | null, max_custom_entries: number | null, max_custom_total_bytes: number | null, max_custom_key_bytes: number | null, dedup_window_ms: number | null, max_queue_depth: number | null, max_in_flight: number | null, rate_limit: number | null, rate_period_ms: number | null, rate_burst: number | null, limit_key: string | null, key_max_in_flight: number | null, key_rate_limit: number | null, key_rate_period_ms: number | null, key_rate_burst: number | null, key_overrides: { [key in string]: KeyOverride } | null, };

/**
 * The limits of one value of a queue's `limit_key` (unset: the queue's `key_*` default).
 */
export type KeyOverride = { max_in_flight?: number | null, rate_limit?: number | null, rate_burst?: number | null, };

/**
 * A queue's pause: `all_queues` when only the pause of every queue holds it.
 */
export type QueuePause = { 
/**
 * When the pause ends by itself; null: until resumed.
 */
until_ms: number | null, all_queues: boolean, };

/**
 * `GET /queues/{name}` and each entry of `GET /queues`.
 */
export type Queue = { name: string, declared: boolean, depths: Depths, 
/**
 * The queue's `[[queues]]` entry (unset fields null), or null when it is not declared.
 */
overrides: (QueueLimits & { name: string }) | null, effective: QueueLimits, 
/**
 * Null unless reserves skip the queue; `all_queues` when only the pause of every queue holds it.
 */
paused: QueuePause | null, 
/**
 * Ready jobs that wait because their key is at its `key_max_in_flight`.
 */
held_by_key_limit: number, };

export type JobState = "ready" | "scheduled" | "inflight" | "dead_letter";

/**
 * A custom metadata value.
 */
export type CustomValue = string | number | number | boolean;

/**
 * A job's payload as a listing or detail view shows it.
 */
export type Payload = { encoding: string, size_bytes: number, 
/**
 * Present in detail views, and in listings for payloads up to 4 KiB.
 */
data_b64?: string, };

export type DeadLetterCause = "attempts_exhausted" | "rejected" | "lease_expired" | "admin" | "cancelled" | "unspecified";

/**
 * A live job or a dead letter.
 */
export type Job = { id: string, key_b64: string, job_type: string, priority: number, attempt: number, max_attempts: number, enqueued_at_ms: number, custom: { [key in string]: CustomValue }, payload: Payload, scheduled_at_ms?: number, 
/**
 * When a scheduled job (or a delayed retry) becomes ready.
 */
due_at_ms?: number, 
/**
 * In flight under a lease that was cancelled: its worker learns it at its next extend, ack or nack.
 */
cancelled?: boolean, lease_expires_at_ms?: number, 
/**
 * Set by the job-by-id lookup.
 */
queue?: string, state?: JobState, 
/**
 * Dead letters only.
 */
failed_at_ms?: number, cause?: DeadLetterCause, last_reason?: string, };

/**
 * `GET /queues/{name}/jobs`.
 */
export type JobPage = { jobs: Array<Job>, next_cursor: string | null, truncated: boolean, };

/**
 * `GET /queues/{name}/jobs:count`.
 */
export type JobCount = { count: number, };

/**
 * A payload as `POST /queues/{name}/jobs` takes it.
 */
export type PayloadInput = { encoding: string, data_b64?: string, data_text?: string, };

/**
 * What `POST /queues/{name}/jobs` takes. `custom` holds strings, numbers and bools
 * ([`CustomValue`]); any other JSON value is refused, naming its key.
 */
export type EnqueueRequest = { job_type: string, payload?: PayloadInput, priority?: number, max_attempts?: number, scheduled_at_ms?: number, idempotency_key?: string, custom?: Record<string, CustomValue>, };

/**
 * `POST /queues/{name}/jobs`: the new job's id.
 */
export type Enqueued = { job_id: string, };

/**
 * `POST /jobs/{id}:cancel`: `outcome` is `removed`, `cancelled_in_flight` or `already_cancelled`.
 */
export type CancelResult = { job_id: string, outcome: string, };

/**
 * `POST /queues/{name}/jobs:dead-letter`.
 */
export type DeadLetteredResult = { dead_lettered: number, missing: number, };

/**
 * `POST /queues/{name}/dead-letters:requeue`.
 */
export type RequeuedResult = { requeued: number, missing: number, };

/**
 * `POST /queues/{name}/dead-letters:delete`.
 */
export type DeletedResult = { deleted: number, missing: number, };

/**
 * `POST /queues/{name}/jobs:bulk` with `dry_run`: how many jobs match.
 */
export type BulkMatched = { matched: number, };

/**
 * `POST /queues/{name}/jobs:bulk`: how many jobs the action touched.
 */
export type BulkAffected = { affected: number, };

/**
 * `POST /queues/{name}/jobs:bulk`: `{matched}` with `dry_run`, else `{affected}`.
 */
export type BulkAnswer = BulkMatched | BulkAffected;

/**
 * `DELETE /queues/{name}`.
 */
export type QueueDeleted = { purged: number, etag: string, };

/**
 * An audit log entry; `details` depend on the action.
 */
export type AuditEntry = { seq: number, ts_ms: number, actor: string, role: Role, action: string, details: Record<string, unknown>, };

/**
 * `GET /audit`.
 */
export type AuditPage = { entries: Array<AuditEntry>, next_before: number | null, };

/**
 * The query of `GET /audit`: entries before the sequence number `before`, at most `limit`
 * (1..100, default 50), of one actor, with actions starting with `action_prefix`.
 */
export type AuditQuery = { before?: number, limit?: number, actor?: string, action_prefix?: string, };

/**
 * `GET /config`.
 */
export type ConfigView = { effective: Record<string, unknown>, etag: string, env_pinned: Array<string>, restart_only: Array<string>, pending_restart: Array<string>, };

/**
 * One change of `PUT /config`.
 */
export type ConfigChange = { path: string, value: ConfigValue, };

/**
 * What a change of the configuration file answers.
 */
export type WriteResult = { applied: boolean, requires_restart: Array<string>, etag: string, };

/**
 * Why the core refused a job.
 */
export type Rejection = { reason: string, detail: string, };

/**
 * The body of every error answer.
 */
export type ErrorBody = { error: string, code: string, rejection?: Rejection, 
/**
 * On a node that does not serve (code `not_leader`): the leader's client address, if known.
 */
leader_addr?: string, };

/**
 * A worker id that reserved jobs recently, and what it holds now.
 */
export type WorkerInfo = { worker_id: string, last_seen_ms: number, 
/**
 * Reserve calls seen from it.
 */
reserves: number, jobs_delivered: number, 
/**
 * Jobs it holds (in flight) now, per queue.
 */
held: { [key in string]: number }, held_total: number, 
/**
 * The soonest lease among the jobs it holds, if any.
 */
next_lease_expires_at_ms: number | null, };

/**
 * `GET /workers`.
 */
export type WorkerList = { workers: Array<WorkerInfo>, };

/**
 * A cron cadence.
 */
export type Cron = { expression: string, time_zone: string, };

/**
 * The payload of a schedule's job.
 */
export type PayloadSize = { encoding: string, size_bytes: number, };

export type Overlap = "skip" | "allow";

export type CatchUp = "latest" | "none";

/**
 * A recurring schedule as the admin API shows it.
 */
export type ScheduleInfo = { id: string, cron: Cron | null, every_ms: number | null, queue: string, job_type: string, payload: PayloadSize | null, priority: number | null, max_attempts: number | null, custom: { [key in string]: CustomValue }, overlap: Overlap, catch_up: CatchUp, 
/**
 * Null when a cron expression has no later slot.
 */
next_fire_at_ms: number | null, last_slot_at_ms: number | null, last_job_id: string | null, fired: number, created_at_ms: number, };

/**
 * `GET /schedules`.
 */
export type ScheduleList = { schedules: Array<ScheduleInfo>, };

/**
 * `DELETE /schedules/{id}`.
 */
export type ScheduleDeleted = { id: string, deleted: boolean, };

/**
 * A cron cadence as `PUT /schedules/{id}` takes it (`time_zone` defaults to UTC).
 */
export type CronInput = { expression: string, time_zone?: string, };

/**
 * What `PUT /schedules/{id}` takes: a cadence (`cron` or `every_ms`), the job's queue and
 * fields (as `POST /queues/{name}/jobs` takes them), and the two policies (strings, which the
 * server checks and names in its error; the TypeScript types narrow them).
 */
export type ScheduleBody = { cron?: CronInput, every_ms?: number, queue: string, overlap?: Overlap, catch_up?: CatchUp, job_type: string, payload?: PayloadInput, priority?: number, max_attempts?: number, scheduled_at_ms?: number, idempotency_key?: string, custom?: Record<string, CustomValue>, };

/**
 * `POST /queues/{name}/pause` and `POST /queues:pause`: the scope is `queue`, or `all_queues`
 * (true) for every queue.
 */
export type PauseResult = { queue?: string, all_queues?: boolean, paused: boolean, until_ms: number | null, };

/**
 * `POST /queues/{name}/resume` and `POST /queues:resume`.
 */
export type ResumeResult = { queue?: string, all_queues?: boolean, resumed: boolean, };

/**
 * The pause of every queue in `GET /pauses`.
 */
export type AllQueuesPause = { until_ms: number | null, };

/**
 * One queue's own pause in `GET /pauses`.
 */
export type NamedPause = { queue: string, until_ms: number | null, };

/**
 * `GET /pauses`.
 */
export type PauseList = { all_queues: AllQueuesPause | null, queues: Array<NamedPause>, };

/**
 * One member of the cluster as the node asked sees it.
 */
export type ClusterMember = { id: number, 
/**
 * Its client (gRPC) address.
 */
addr: string, 
/**
 * Its cluster (Raft) address; null when this node does not know it.
 */
raft_addr: string | null, 
/**
 * A voter, else a learner (catching up before it votes).
 */
voter: boolean, leader: boolean, 
/**
 * Log entries the member lacks; known on the leader only (null elsewhere).
 */
replication_lag: number | null, };

/**
 * `GET /cluster` on a node in cluster mode (`enabled` is always true).
 */
export type ClusterNode = { enabled: true, node_id: number, 
/**
 * `leader`, `follower`, `candidate`, `learner`, ... as the node reports it.
 */
role: string, 
/**
 * Whether this node's queue serves (the leader, once it is ready).
 */
serving: boolean, term: number, leader_id: number | null, 
/**
 * The leader's client (gRPC) address; its admin address is not known here.
 */
leader_addr: string | null, last_applied_index: number | null, last_log_index: number | null, snapshot_index: number | null, members: Array<ClusterMember>, };

/**
 * `GET /cluster` on a single node: `{enabled: false}`.
 */
export type ClusterDisabled = { enabled: false, };

/**
 * `POST /session`: a key's name and material.
 */
export type LoginRequest = { name: string, key: string, };

/**
 * The query of `GET /overview`: `history=false` leaves the history out.
 */
export type OverviewQuery = { history?: boolean, };

/**
 * The query of `GET /queues`: at most `limit` queues, by name, after `after`.
 */
export type QueueListQuery = { limit?: number, after?: string, };

/**
 * `PUT /queues/{name}`: the fields to set (a value) or remove (`null`) in the queue's
 * declaration, against the configuration file's `etag`.
 */
export type QueuePutRequest = { etag: string, overrides: Record<string, ConfigValue>, };

/**
 * The query of `DELETE /queues/{name}`: `purge=true` also removes the queue's jobs.
 */
export type QueueDeleteQuery = { purge: boolean | undefined, };

/**
 * `POST /jobs/{id}/cancel` (the body may be left out).
 */
export type CancelRequest = { reason?: string, };

/**
 * `POST /queues/{name}/jobs:dead-letter`: dead-letters the jobs of `keys_b64` found in `state`.
 */
export type DeadLetterRequest = { state: string, keys_b64: Array<string>, reason?: string, };

/**
 * `POST /queues/{name}/dead-letters:requeue` and `:delete`: the dead letters of `keys_b64`.
 */
export type KeysRequest = { keys_b64: Array<string>, reason?: string, };

/**
 * `POST /queues/{name}/jobs:bulk`: `action` on every job in `state` that matches the filter
 * (`job_type`, and `custom` entries compared as strings); with `dry_run`, only counts them.
 */
export type BulkRequest = { state: string, action: string, job_type?: string, custom?: Record<string, string | number>, reason?: string, dry_run: boolean | undefined, };

/**
 * `POST /queues/{name}/pause` and `POST /queues:pause`.
 */
export type PauseRequest = { 
/**
 * When the pause ends by itself, in Unix milliseconds; absent: until resumed.
 */
until_ms?: number, reason?: string, };

/**
 * `PUT /config`: the changes (`null` removes a key), against the file's `etag`.
 */
export type ConfigPutRequest = { etag: string, changes: Array<ConfigChange>, };

/**
 * `POST /auth/keys`: a new admin key, against the file's `etag`.
 */
export type KeyAddRequest = { etag: string, name: string, key: string, };

/**
 * `GET /cluster`: `{enabled: false}` on a single node.
 */
export type ClusterInfo = ClusterDisabled | ClusterNode;

export type QueueField = keyof QueueLimits

export type BulkActionName = 'requeue' | 'delete' | 'dead_letter'

export type ConfigValue = string | number | boolean | Array<string | number | boolean> | null
