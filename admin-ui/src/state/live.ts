/**
 * Live server statistics shared by every view: one Server-Sent Events connection to the admin
 * API (`hello`, `stats`, `config`, `audit`, `lagged` events), with a polling fallback on the
 * overview endpoint while the stream is down. Keeps the total's history (every queue summed,
 * over the server's history span) and a short ring per queue of the frame (for sparklines),
 * seeded from the server's history summary and extended by every frame. A queue's whole history
 * is fetched by its page (`api.queueHistory`).
 */
import { reactive, shallowRef, triggerRef } from 'vue'
import { api, eventChecks } from '../api/client'
import type { Check } from '../api/validate'
import type { AuditEntry, Frame, FrameTotal, History, HistoryInfo, HistorySample, ServerSummary } from '../api/types'

export type LiveMode = 'connecting' | 'live' | 'polling' | 'offline'

const POLL_MS = 2000
/** Stream errors in a row before polling takes over (the browser keeps retrying the stream). */
const ERRORS_BEFORE_POLLING = 2
const DEFAULT_SECONDS = 3600
/** Seconds of each queue's sparkline ring. */
export const SPARK_SECONDS = 300

export const live = reactive({
  mode: 'connecting' as LiveMode,
  server: null as ServerSummary | null,
  frame: null as Frame | null,
  /** Bumped after each config reload on the server; views that show config watch it. */
  configReloads: 0,
  /** Events the server dropped because this tab fell behind. */
  lagged: 0,
  /** The server's history budget and how many queues it folds into `other`. */
  historyInfo: null as HistoryInfo | null,
})

/** Short per-queue rings of the queues in the frame; a shallow ref triggered by hand. */
export const history = shallowRef<Record<string, HistorySample[]>>({})
/** Every queue summed, over the server's history span. */
export const totalHistory = shallowRef<HistorySample[]>([])

const auditListeners = new Set<(entry: AuditEntry) => void>()
export function onAuditEvent(listener: (entry: AuditEntry) => void): () => void {
  auditListeners.add(listener)
  return () => auditListeners.delete(listener)
}

let source: EventSource | null = null
let pollTimer: ReturnType<typeof setInterval> | null = null
let errorsInRow = 0
let started = false

/** The sum over every queue (older servers send no `total`: the frame's queues are all of them). */
export function frameTotal(frame: Frame): FrameTotal {
  if (frame.total) return frame.total
  const t: FrameTotal = {
    ready: 0, scheduled: 0, inflight: 0, dead_lettered: 0,
    totals: { enqueued: 0, reserved: 0, acked: 0, nacked: 0, dead_lettered: 0 },
    rates: { enqueued: 0, acked: 0, nacked: 0, dead_lettered: 0 },
  }
  for (const q of Object.values(frame.queues)) {
    t.ready += q.ready; t.scheduled += q.scheduled; t.inflight += q.inflight; t.dead_lettered += q.dead_lettered
    t.rates.enqueued += q.rates.enqueued; t.rates.acked += q.rates.acked
    t.rates.nacked += q.rates.nacked; t.rates.dead_lettered += q.rates.dead_lettered
  }
  return t
}

/** Appends `sample` when it is newer than the ring's last, dropping what is older than `seconds`. */
export function extend(ring: HistorySample[], sample: HistorySample, seconds: number): void {
  const last = ring[ring.length - 1]
  if (last && last.ts_ms >= sample.ts_ms) return
  ring.push(sample)
  const oldest = sample.ts_ms - seconds * 1000
  let drop = 0
  while (drop < ring.length && (ring[drop]?.ts_ms ?? Infinity) <= oldest) drop++
  if (drop > 0) ring.splice(0, drop)
}

/** The span of the server's history, in seconds. */
export function historySeconds(): number {
  return live.historyInfo?.seconds ?? DEFAULT_SECONDS
}

function applyFrame(frame: Frame): void {
  if (live.frame && frame.seq <= live.frame.seq && frame.ts_ms <= live.frame.ts_ms) return
  live.frame = frame
  const rings: Record<string, HistorySample[]> = {}
  for (const [name, q] of Object.entries(frame.queues)) {
    const ring = history.value[name] ?? []
    extend(ring, { ts_ms: frame.ts_ms, ...q.rates }, SPARK_SECONDS)
    rings[name] = ring
  }
  history.value = rings
  extend(totalHistory.value, { ts_ms: frame.ts_ms, ...frameTotal(frame).rates }, historySeconds())
  triggerRef(totalHistory)
}

function applyHistory(seed: History, info: HistoryInfo): void {
  live.historyInfo = info
  history.value = Object.fromEntries(Object.entries(seed.queues).map(([k, v]) => [k, v.slice(-SPARK_SECONDS)]))
  totalHistory.value = seed.total.slice()
}

/** The event's JSON, checked like an answer; null (the event is dropped, and logged) when it does not parse or fit. */
function parse<T>(event: MessageEvent, check: Check<T>): T | null {
  try {
    return check(JSON.parse(event.data as string), `event ${event.type}`)
  } catch (err) {
    console.error((err as Error).message)
    return null
  }
}

async function pollOnce(): Promise<void> {
  try {
    const overview = await api.overview(live.frame === null)
    live.server = overview.server
    if (overview.history) applyHistory(overview.history, overview.history_info)
    else live.historyInfo = overview.history_info
    applyFrame(overview.frame)
    if (live.mode !== 'live') live.mode = 'polling'
  } catch {
    if (live.mode !== 'live') live.mode = 'offline'
  }
}

function startPolling(): void {
  if (pollTimer !== null) return
  void pollOnce()
  pollTimer = setInterval(() => void pollOnce(), POLL_MS)
}

function stopPolling(): void {
  if (pollTimer !== null) clearInterval(pollTimer)
  pollTimer = null
}

function connect(): void {
  if (typeof EventSource === 'undefined') {
    startPolling()
    return
  }
  source = new EventSource(api.eventsUrl(), { withCredentials: true })
  source.addEventListener('open', () => {
    errorsInRow = 0
  })
  source.addEventListener('hello', (event) => {
    const hello = parse(event as MessageEvent, eventChecks.hello)
    if (!hello) return
    applyHistory(hello.history, hello.history_info)
    live.frame = null
    applyFrame(hello.frame)
    live.mode = 'live'
    stopPolling()
    errorsInRow = 0
  })
  source.addEventListener('stats', (event) => {
    const frame = parse(event as MessageEvent, eventChecks.stats)
    if (frame) applyFrame(frame)
  })
  source.addEventListener('config', () => {
    live.configReloads++
  })
  source.addEventListener('audit', (event) => {
    const entry = parse(event as MessageEvent, eventChecks.audit)
    if (entry) auditListeners.forEach((l) => l(entry))
  })
  source.addEventListener('lagged', (event) => {
    const dropped = Number((event as MessageEvent).data)
    live.lagged += Number.isFinite(dropped) ? dropped : 1
  })
  source.addEventListener('error', () => {
    errorsInRow++
    if (live.mode === 'live') live.mode = 'connecting'
    if (errorsInRow >= ERRORS_BEFORE_POLLING) startPolling()
  })
}

/** Starts the stream (once), and loads the server summary the stream does not carry. */
export function startLive(): void {
  if (started) return
  started = true
  void api.overview(false).then((o) => {
    live.server = o.server
  }, () => undefined)
  connect()
}

export function stopLive(): void {
  started = false
  source?.close()
  source = null
  stopPolling()
  live.mode = 'connecting'
  live.frame = null
  history.value = {}
  totalHistory.value = []
}
