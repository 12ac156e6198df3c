/**
 * Cluster mode as this node sees it (`GET /cluster`), refreshed every 2 s while signed in on a
 * cluster node, and whether this node serves the queue. A data route that answers 503
 * `not_leader` counts at once (the node may have just lost its leadership) and triggers a refresh.
 */
import { computed, reactive } from 'vue'
import { api, onNotLeader } from '../api/client'
import type { ClusterNode } from '../api/types'
import { notServing, type Refusal } from '../lib/cluster'

export const CLUSTER_POLL_MS = 2000

export const cluster = reactive({
  /** This node's view; null on a single node or before the first answer. */
  info: null as ClusterNode | null,
  /** Whether `GET /cluster` has answered once (so the shell knows whether to show the entry). */
  checked: false,
  /** The last `not_leader` refusal of a data route, until the node is seen serving again. */
  refusal: null as Refusal | null,
  /** Why the last refresh failed ('' when it worked). */
  error: '',
  /** When the last refresh answered (ms since the epoch). */
  updatedAtMs: 0,
})

/** Null when this node serves the queue (or is a single node); else why it does not. */
export const notServingNow = computed(() => notServing(cluster.info, cluster.refusal))

let inFlight: Promise<void> | null = null
let timer: ReturnType<typeof setInterval> | null = null

/** Asks the node for its view of the cluster; one request at a time. */
export function refreshCluster(): Promise<void> {
  if (inFlight) return inFlight
  inFlight = (async () => {
    try {
      const answer = await api.cluster()
      cluster.info = answer.enabled ? answer : null
      if (!answer.enabled || answer.serving) cluster.refusal = null
      cluster.error = ''
      cluster.updatedAtMs = Date.now()
    } catch (err) {
      cluster.error = (err as Error).message
    } finally {
      cluster.checked = true
      inFlight = null
    }
  })()
  return inFlight
}

onNotLeader((error) => {
  cluster.refusal = { message: error.message, leaderAddr: error.leaderAddr }
  if (cluster.info) cluster.info.serving = false
  void refreshCluster()
})

/** Keeps the view fresh while signed in, on a cluster node only (a single node stays single). */
export function startCluster(): void {
  if (timer !== null) return
  timer = setInterval(() => {
    if (cluster.info || cluster.refusal) void refreshCluster()
  }, CLUSTER_POLL_MS)
  if (!cluster.checked) void refreshCluster()
}

export function stopCluster(): void {
  if (timer !== null) clearInterval(timer)
  timer = null
  cluster.info = null
  cluster.refusal = null
  cluster.checked = false
}
