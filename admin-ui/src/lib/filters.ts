/**
 * Job-list filters (job type, custom metadata key = value) and how they live in a URL query,
 * so that a filtered view can be bookmarked. The admin API takes the same query parameters:
 * `job_type=<type>` and `custom.<key>=<value>`.
 */

export interface CustomMatch {
  key: string
  value: string
}

export interface JobFilter {
  jobType: string
  custom: CustomMatch[]
}

export type Query = Record<string, string | null | (string | null)[] | undefined>

const CUSTOM_PREFIX = 'custom.'

export function emptyFilter(): JobFilter {
  return { jobType: '', custom: [] }
}

export function isFilterEmpty(filter: JobFilter): boolean {
  return filter.jobType === '' && filter.custom.length === 0
}

function firstValue(value: Query[string]): string {
  if (Array.isArray(value)) return value[0] ?? ''
  return value ?? ''
}

/** Reads a filter out of a route or URL query; unrelated parameters are ignored. */
export function filterFromQuery(query: Query): JobFilter {
  const filter = emptyFilter()
  filter.jobType = firstValue(query.job_type)
  for (const [name, value] of Object.entries(query)) {
    if (name.startsWith(CUSTOM_PREFIX) && name.length > CUSTOM_PREFIX.length) {
      filter.custom.push({ key: name.slice(CUSTOM_PREFIX.length), value: firstValue(value) })
    }
  }
  filter.custom.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  return filter
}

/** The query parameters of a filter (empty parts left out), in a stable order. */
export function filterToQuery(filter: JobFilter): Record<string, string> {
  const query: Record<string, string> = {}
  if (filter.jobType !== '') query.job_type = filter.jobType
  const custom = filter.custom.filter((c) => c.key !== '')
  custom.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  for (const c of custom) query[CUSTOM_PREFIX + c.key] = c.value
  return query
}

/** A short human description, e.g. `job type email, tenant = acme`. */
export function describeFilter(filter: JobFilter): string {
  const parts: string[] = []
  if (filter.jobType !== '') parts.push(`job type ${filter.jobType}`)
  for (const c of filter.custom) parts.push(`${c.key} = ${c.value}`)
  return parts.join(', ')
}
