/** The per-queue limit fields, how each is edited, and how a draft becomes an override. */
import type { KeyOverride, QueueField, QueueLimits } from '../api/types'

export type FieldKind = 'int' | 'ms' | 'bytes' | 'backoff' | 'list' | 'text' | 'overrides'

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
  { field: 'limit_key', label: 'Limit key', kind: 'text', help: 'A custom metadata key (for example tenant): the per-key limits below apply to each of its values on their own.' },
  { field: 'key_max_in_flight', label: 'Max in flight per key', kind: 'int', help: 'Jobs of one key value leased at once; at least 1; needs a limit key.' },
  { field: 'key_rate_limit', label: 'Rate limit per key', kind: 'int', help: 'Jobs of one key value leased per key rate period; at least 1; needs a limit key.' },
  { field: 'key_rate_period_ms', label: 'Key rate period', kind: 'ms', help: 'The period of every per-key rate (default 1 s).' },
  { field: 'key_rate_burst', label: 'Key rate burst', kind: 'int', help: 'Per key value (default: the per-key rate limit); needs a per-key rate limit.' },
  { field: 'key_overrides', label: 'Per-value overrides', kind: 'overrides', help: 'One value per line: acme max_in_flight=8 rate_limit=50 (rate_burst too). What a line leaves out is inherited.' },
]

const OVERRIDE_FIELDS = ['max_in_flight', 'rate_limit', 'rate_burst'] as const

/** `key_overrides` as the lines of its text box: `value field=n field=n`, values sorted. */
export function overridesText(overrides: Record<string, KeyOverride>): string {
  return Object.keys(overrides).sort().map((value) => {
    const limits = overrides[value]!
    const parts = OVERRIDE_FIELDS.filter((f) => limits[f] !== null && limits[f] !== undefined).map((f) => `${f}=${limits[f]}`)
    return [value, ...parts].join(' ')
  }).join('\n')
}

/** Parses the lines of the overrides text box; a problem names the line. */
export function parseOverrides(text: string): { value: Record<string, KeyOverride> } | { problem: string } {
  const value: Record<string, KeyOverride> = {}
  for (const [n, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (line === '') continue
    const [key, ...parts] = line.split(/\s+/)
    const limits: KeyOverride = {}
    for (const part of parts) {
      const [field, number] = part.split('=')
      if (!(OVERRIDE_FIELDS as readonly string[]).includes(field ?? '')) return { problem: `Per-value overrides, line ${n + 1}: ${field} is not max_in_flight, rate_limit or rate_burst` }
      const parsed = Number(number)
      if (!Number.isInteger(parsed) || parsed < 1) return { problem: `Per-value overrides, line ${n + 1}: ${field} must be a whole number, 1 or more` }
      limits[field as (typeof OVERRIDE_FIELDS)[number]] = parsed
    }
    if (parts.length === 0) return { problem: `Per-value overrides, line ${n + 1}: give ${key} a limit, for example ${key} max_in_flight=2` }
    value[key!] = limits
  }
  return { value }
}

export interface FieldDraft {
  set: boolean
  text: string
}

export function draftOf(value: QueueLimits[QueueField] | undefined): FieldDraft {
  if (value === null || value === undefined) return { set: false, text: '' }
  if (Array.isArray(value)) return { set: true, text: value.join('\n') }
  if (typeof value === 'object') return { set: true, text: overridesText(value) }
  return { set: true, text: String(value) }
}

export function valueOf(spec: FieldSpec, draft: FieldDraft): { value: QueueLimits[QueueField] } | { problem: string } {
  if (!draft.set) return { value: null }
  if (spec.kind === 'list') return { value: draft.text.split('\n').map((s) => s.trim()).filter((s) => s !== '') }
  if (spec.kind === 'text') return draft.text.trim() === '' ? { problem: `${spec.label}: name a custom metadata key` } : { value: draft.text.trim() }
  if (spec.kind === 'overrides') return parseOverrides(draft.text)
  if (spec.kind === 'backoff') {
    if (draft.text !== 'none' && draft.text !== 'exponential') return { problem: `${spec.label}: choose none or exponential` }
    return { value: draft.text }
  }
  const n = Number(draft.text)
  if (draft.text.trim() === '' || !Number.isInteger(n) || n < 0) return { problem: `${spec.label}: a whole number, 0 or more` }
  return { value: n }
}

export function showValue(spec: FieldSpec, value: QueueLimits[QueueField] | undefined): string {
  if (value === null || value === undefined) return spec.field === 'allowed_job_types' ? 'any' : ['max_queue_depth', 'max_in_flight', 'rate_limit', 'key_max_in_flight', 'key_rate_limit'].includes(spec.field) ? 'unlimited' : spec.field === 'allowed_encodings' ? 'any' : '—'
  if (Array.isArray(value)) return value.length ? value.join(', ') : 'none'
  if (typeof value === 'object') return overridesText(value).split('\n').join('; ') || 'none'
  return String(value)
}
