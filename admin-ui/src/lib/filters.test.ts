import { describe, expect, it } from 'vitest'
import { describeFilter, filterFromQuery, filterToQuery } from './filters'

describe('filters', () => {
  it('reads job type and custom matches from a query, ignoring the rest', () => {
    const f = filterFromQuery({ state: 'ready', job_type: 'email', 'custom.tenant': 'acme', 'custom.a': ['1', '2'] })
    expect(f).toEqual({ jobType: 'email', custom: [{ key: 'a', value: '1' }, { key: 'tenant', value: 'acme' }] })
    expect(describeFilter(f)).toBe('job type email, a = 1, tenant = acme')
  })
  it('writes only the parts that are set, and round-trips', () => {
    const f = { jobType: '', custom: [{ key: 'z', value: '' }, { key: '', value: 'dropped' }, { key: 'b', value: 'x' }] }
    expect(filterToQuery(f)).toEqual({ 'custom.b': 'x', 'custom.z': '' })
    expect(filterFromQuery(filterToQuery(f))).toEqual({ jobType: '', custom: [{ key: 'b', value: 'x' }, { key: 'z', value: '' }] })
  })
})
