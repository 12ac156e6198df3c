/// <reference types="vite/client" />
import 'vue-router'

declare module 'vue-router' {
  interface RouteMeta {
    public?: boolean
    title?: string
    /** Shown on a cluster node that does not serve the queue (a follower), too. */
    anyNode?: boolean
  }
}
