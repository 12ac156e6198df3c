import { describe, expect, it } from 'vitest'
import { QUEUE_FIELDS, draftOf, overridesText, parseOverrides, showValue, valueOf } from './queueFields'

const spec = (field: string) => QUEUE_FIELDS.find((s) => s.field === field)!

describe('queue fields', () => {
  it('lists every per-queue key of [[queues]] once', () => {
    const fields = QUEUE_FIELDS.map((s) => s.field)
    expect(new Set(fields).size).toBe(26)
    expect(fields).toContain('limit_key')
    expect(fields).toContain('key_overrides')
  })
  it('writes per-value overrides as lines, leaving out what a value inherits', () => {
    const text = overridesText({ zeta: { rate_limit: 5, max_in_flight: null }, acme: { max_in_flight: 8, rate_limit: 50, rate_burst: null } })
    expect(text).toBe('acme max_in_flight=8 rate_limit=50\nzeta rate_limit=5')
    expect(draftOf({ acme: { max_in_flight: 8 } })).toEqual({ set: true, text: 'acme max_in_flight=8' })
    expect(showValue(spec('key_overrides'), { a: { max_in_flight: 1 }, b: { rate_limit: 2 } })).toBe('a max_in_flight=1; b rate_limit=2')
  })
  it('parses the lines back, and names the line of a mistake', () => {
    expect(parseOverrides('acme max_in_flight=8 rate_limit=50\n\n  trial   rate_limit=1 rate_burst=2 ')).toEqual({
      value: { acme: { max_in_flight: 8, rate_limit: 50 }, trial: { rate_limit: 1, rate_burst: 2 } },
    })
    expect(parseOverrides('acme max_inflight=8')).toEqual({ problem: 'Per-value overrides, line 1: max_inflight is not max_in_flight, rate_limit or rate_burst' })
    expect(parseOverrides('a rate_limit=1\nb max_in_flight=0')).toEqual({ problem: 'Per-value overrides, line 2: max_in_flight must be a whole number, 1 or more' })
    expect(parseOverrides('acme')).toEqual({ problem: 'Per-value overrides, line 1: give acme a limit, for example acme max_in_flight=2' })
  })
  it('takes a limit key as text and refuses an empty one', () => {
    expect(valueOf(spec('limit_key'), { set: true, text: ' tenant ' })).toEqual({ value: 'tenant' })
    expect(valueOf(spec('limit_key'), { set: true, text: '' })).toEqual({ problem: 'Limit key: name a custom metadata key' })
    expect(showValue(spec('key_max_in_flight'), null)).toBe('unlimited')
  })
})
