/**
 * Live server statistics shared by every view: one Server-Sent Events connection to the admin
 * API (`hello`, `stats`, `config`, `audit`, `lagged` events), with a polling fallback on the
 * overview endpoint while the stream is down. Keeps each queue's history ring (per-second
 * rates), seeded from the server's ring and extended by every frame.
 */
import { reactive, shallowRef, triggerRef } from 'vue'
import { api } from '../api/client'
import type { AuditEntry, Frame, History, HistorySample, ServerSummary } from '../api/types'

export type LiveMode = 'connecting' | 'live' | 'polling' | 'offline'

const POLL_MS = 2000
/** Stream errors in a row before polling takes over (the browser keeps retrying the stream). */
const ERRORS_BEFORE_POLLING = 2
const DEFAULT_RING = 3600

export const live = reactive({
  mode: 'connecting' as LiveMode,
  server: null as ServerSummary | null,
  frame: null as Frame | null,
  /** Bumped after each config reload on the server; views that show config watch it. */
  configReloads: 0,
  /** Events the server dropped because this tab fell behind. */
  lagged: 0,
})

/** Per-queue history; a shallow ref triggered by hand, since rings are long arrays. */
export const history = shallowRef<History>({})

const auditListeners = new Set<(entry: AuditEntry) => void>()
export function onAuditEvent(listener: (entry: AuditEntry) => void): () => void {
  auditListeners.add(listener)
  return () => auditListeners.delete(listener)
}

let source: EventSource | null = null
let pollTimer: ReturnType<typeof setInterval> | null = null
let errorsInRow = 0
let ringLength = DEFAULT_RING
let started = false

function sampleOf(frame: Frame, name: string): HistorySample | null {
  const q = frame.queues[name]
  if (!q) return null
  return { ts_ms: frame.ts_ms, ...q.rates }
}

function applyFrame(frame: Frame): void {
  if (live.frame && frame.seq <= live.frame.seq && frame.ts_ms <= live.frame.ts_ms) return
  live.frame = frame
  const rings = history.value
  for (const name of Object.keys(frame.queues)) {
    const sample = sampleOf(frame, name)
    if (!sample) continue
    const ring = rings[name] ?? (rings[name] = [])
    const last = ring[ring.length - 1]
    if (last && last.ts_ms >= sample.ts_ms) continue
    ring.push(sample)
    if (ring.length > ringLength) ring.splice(0, ring.length - ringLength)
  }
  triggerRef(history)
}

function applyHistory(seed: History): void {
  let longest = 0
  for (const ring of Object.values(seed)) longest = Math.max(longest, ring.length)
  ringLength = Math.max(DEFAULT_RING, longest)
  history.value = Object.fromEntries(Object.entries(seed).map(([k, v]) => [k, v.slice()]))
}

function parse<T>(event: MessageEvent): T | null {
  try {
    return JSON.parse(event.data as string) as T
  } catch {
    return null
  }
}

async function pollOnce(): Promise<void> {
  try {
    const overview = await api.overview(live.frame === null)
    live.server = overview.server
    if (overview.history) applyHistory(overview.history)
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
    const hello = parse<{ history: History; frame: Frame }>(event as MessageEvent)
    if (!hello) return
    applyHistory(hello.history ?? {})
    live.frame = null
    applyFrame(hello.frame)
    live.mode = 'live'
    stopPolling()
    errorsInRow = 0
  })
  source.addEventListener('stats', (event) => {
    const frame = parse<Frame>(event as MessageEvent)
    if (frame) applyFrame(frame)
  })
  source.addEventListener('config', () => {
    live.configReloads++
  })
  source.addEventListener('audit', (event) => {
    const entry = parse<AuditEntry>(event as MessageEvent)
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
}
