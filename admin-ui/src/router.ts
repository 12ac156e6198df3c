/**
 * The routes of the UI (under /admin/) and the sign-in guard. Every page and every job has a
 * URL: a live job at /jobs/:id, a dead letter at /queues/:name/dead-letters/:key.
 * `meta.anyNode` marks the pages a cluster node shows whether or not it serves the queue (they
 * read this node's own config and cluster view); the others need the leader.
 */
import { createRouter, createWebHistory } from 'vue-router'
import { cluster, refreshCluster } from './state/cluster'
import { refreshSession, session } from './state/session'
import AuditView from './views/AuditView.vue'
import ClusterView from './views/ClusterView.vue'
import ConfigView from './views/ConfigView.vue'
import DashboardView from './views/DashboardView.vue'
import JobView from './views/JobView.vue'
import LoginView from './views/LoginView.vue'
import NotFoundView from './views/NotFoundView.vue'
import QueueView from './views/QueueView.vue'
import WorkersView from './views/WorkersView.vue'
import SchedulesView from './views/SchedulesView.vue'

export const QUEUE_TABS = ['jobs', 'enqueue', 'settings', 'danger'] as const
export type QueueTab = (typeof QUEUE_TABS)[number]

export const router = createRouter({
  history: createWebHistory('/admin/'),
  routes: [
    { path: '/login', name: 'login', component: LoginView, meta: { public: true, anyNode: true, title: 'Sign in' } },
    { path: '/', name: 'dashboard', component: DashboardView, meta: { title: 'Dashboard' } },
    {
      path: '/queues/:name/dead-letters/:key',
      name: 'dead-letter',
      component: JobView,
      meta: { title: 'Dead letter' },
    },
    {
      path: '/queues/:name/:tab(jobs|enqueue|settings|danger)?',
      name: 'queue',
      component: QueueView,
      meta: { title: 'Queue' },
    },
    { path: '/jobs/:id', name: 'job', component: JobView, meta: { title: 'Job' } },
    { path: '/workers', name: 'workers', component: WorkersView, meta: { title: 'Workers' } },
    { path: '/schedules', name: 'schedules', component: SchedulesView, meta: { title: 'Schedules' } },
    { path: '/audit', name: 'audit', component: AuditView, meta: { title: 'Audit log' } },
    { path: '/config', name: 'config', component: ConfigView, meta: { title: 'Config', anyNode: true } },
    { path: '/cluster', name: 'cluster', component: ClusterView, meta: { title: 'Cluster', anyNode: true } },
    { path: '/:rest(.*)*', name: 'not-found', component: NotFoundView, meta: { title: 'Not found', anyNode: true } },
  ],
})

router.beforeEach(async (to) => {
  if (!session.checked) await refreshSession()
  if (to.meta.public) {
    if (to.name === 'login' && session.current && !session.current.auth_enabled) return { name: 'dashboard' }
    return true
  }
  if (!session.current) return { name: 'login', query: to.fullPath === '/' ? {} : { next: to.fullPath } }
  // Known before the first page renders, so a follower shows where the leader is, not errors.
  if (!cluster.checked) await refreshCluster()
  return true
})

router.afterEach((to) => {
  const name = typeof to.params.name === 'string' ? to.params.name : ''
  const title = String(to.meta.title ?? '')
  document.title = `${name ? name + ' · ' : ''}${title} · sepp admin`
})
