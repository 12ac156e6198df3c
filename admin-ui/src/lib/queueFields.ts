/** The per-queue limit fields, how each is edited, and how a draft becomes an override. */
import type { QueueField, QueueLimits } from '../api/types'

export type FieldKind = 'int' | 'ms' | 'bytes' | 'backoff' | 'list'

export interface FieldSpec {
  field: QueueField
  label: string
  kind: FieldKind
  help: string
}

export const QUEUE_FIELDS: FieldSpec[] = [
  { field: 'max_lease_duration_ms', label: 'Max lease duration', kind: 'ms', help: 'Longest lease a worker may take or extend to.' },
  { field: 'default_max_attempts', label: 'Default max attempts', kind: 'int', help: 'Attempts a job gets when its producer does not say.' },
  { field: 'max_attempts_ceiling', label: 'Max attempts ceiling', kind: 'int', help: 'Highest max attempts a producer may ask for.' },
  { field: 'default_priority', label: 'Default priority', kind: 'int', help: '0 (lowest) to 9 (highest).' },
  { field: 'retry_delay_ms', label: 'Retry delay', kind: 'ms', help: 'Wait before a nacked job runs again.' },
  { field: 'retry_backoff', label: 'Retry backoff', kind: 'backoff', help: 'none: the same delay each time; exponential: doubling.' },
  { field: 'retry_delay_max_ms', label: 'Retry delay cap', kind: 'ms', help: 'Longest retry delay backoff may reach.' },
  { field: 'max_payload_bytes', label: 'Max payload size', kind: 'bytes', help: 'Largest payload accepted.' },
  { field: 'allowed_encodings', label: 'Allowed encodings', kind: 'list', help: 'One per line; replaces the global list. Empty rejects every payload.' },
  { field: 'allowed_job_types', label: 'Allowed job types', kind: 'list', help: 'One per line; unset allows any.' },
  { field: 'max_schedule_horizon_ms', label: 'Max schedule horizon', kind: 'ms', help: 'How far ahead a job (or a nack delay) may be scheduled.' },
  { field: 'max_custom_entries', label: 'Max custom entries', kind: 'int', help: 'Custom metadata entries per job.' },
  { field: 'max_custom_total_bytes', label: 'Max custom size', kind: 'bytes', help: 'All custom keys and values of a job together.' },
  { field: 'max_custom_key_bytes', label: 'Max custom key size', kind: 'bytes', help: 'Longest custom key.' },
  { field: 'dedup_window_ms', label: 'Dedup window', kind: 'ms', help: 'How long an idempotency key is remembered.' },
  { field: 'max_queue_depth', label: 'Max queue depth', kind: 'int', help: 'Jobs the queue may hold; 0 rejects every enqueue. Cannot lift a global cap.' },
  { field: 'max_in_flight', label: 'Max in flight', kind: 'int', help: 'Jobs of this queue leased at once across all workers; at least 1. Unset: no limit.' },
  { field: 'rate_limit', label: 'Rate limit', kind: 'int', help: 'Jobs of this queue leased per rate period across all workers; at least 1. Unset: no limit.' },
  { field: 'rate_period_ms', label: 'Rate period', kind: 'ms', help: 'The period of the rate limit (default 1 s); needs a rate limit.' },
  { field: 'rate_burst', label: 'Rate burst', kind: 'int', help: 'Leases that may go at once after a quiet spell (default: the rate limit); needs a rate limit.' },
]

export interface FieldDraft {
  set: boolean
  text: string
}

export function draftOf(value: QueueLimits[QueueField] | undefined): FieldDraft {
  if (value === null || value === undefined) return { set: false, text: '' }
  if (Array.isArray(value)) return { set: true, text: value.join('\n') }
  return { set: true, text: String(value) }
}

export function valueOf(spec: FieldSpec, draft: FieldDraft): { value: QueueLimits[QueueField] } | { problem: string } {
  if (!draft.set) return { value: null }
  if (spec.kind === 'list') return { value: draft.text.split('\n').map((s) => s.trim()).filter((s) => s !== '') }
  if (spec.kind === 'backoff') {
    if (draft.text !== 'none' && draft.text !== 'exponential') return { problem: `${spec.label}: choose none or exponential` }
    return { value: draft.text }
  }
  const n = Number(draft.text)
  if (draft.text.trim() === '' || !Number.isInteger(n) || n < 0) return { problem: `${spec.label}: a whole number, 0 or more` }
  return { value: n }
}

export function showValue(spec: FieldSpec, value: QueueLimits[QueueField] | undefined): string {
  if (value === null || value === undefined) return spec.field === 'allowed_job_types' ? 'any' : spec.field === 'max_queue_depth' || spec.field === 'max_in_flight' || spec.field === 'rate_limit' ? 'unlimited' : spec.field === 'allowed_encodings' ? 'any' : '—'
  if (Array.isArray(value)) return value.length ? value.join(', ') : 'none'
  return String(value)
}
