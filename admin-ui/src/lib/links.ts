/** The URL of every job: live jobs by id, dead letters by their queue and key. */
import type { Job, JobState } from '../api/types'

export function queueLink(queue: string, tab = ''): string {
  return `/queues/${encodeURIComponent(queue)}${tab ? '/' + tab : ''}`
}

export function jobLink(queue: string, state: JobState, job: Pick<Job, 'id' | 'key_b64'>): string {
  if (state === 'dead_letter') return `${queueLink(queue)}/dead-letters/${encodeURIComponent(job.key_b64)}`
  return `/jobs/${encodeURIComponent(job.id)}`
}
