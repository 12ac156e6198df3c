/** What each enqueue rejection means, in words an operator can act on. */

const EXPLANATIONS: Record<string, string> = {
  unknown_queue: 'The server runs with strict queues and this queue is not declared in its config.',
  payload_too_large: "The payload is larger than this queue's max_payload_bytes.",
  encoding_not_allowed: "The payload's encoding is not in this queue's allowed_encodings.",
  job_type_not_allowed: "The job type is not in this queue's allowed_job_types.",
  custom_entries_too_many: 'There are more custom entries than max_custom_entries allows.',
  custom_map_too_large: 'The custom entries together are larger than max_custom_total_bytes.',
  custom_key_too_long: 'A custom key is longer than max_custom_key_bytes.',
  queue_name_too_long: 'The queue name is longer than max_queue_name_bytes.',
  job_type_name_too_long: 'The job type is longer than max_job_type_bytes.',
  idempotency_key_too_long: 'The idempotency key is longer than max_idempotency_key_bytes.',
  scheduled_too_far: "The schedule is further ahead than this queue's max_schedule_horizon_ms.",
  invalid_request: 'The request breaks a rule of the job format (for example a priority above 9 or max attempts above the ceiling).',
  queue_full: 'The queue holds max_queue_depth jobs already.',
  queue_closing: 'The queue is being deleted or purged right now.',
}

export function explainRejection(reason: string): string {
  return EXPLANATIONS[reason] ?? 'The server refused the job.'
}
