import { describe, expect, it } from 'vitest'
import { MalformedAnswer, arrayOf, shape } from './validate'

const count = shape<{ count: number; next: string | null; extra?: boolean }>({
  count: 'number', next: 'string|null', extra: 'boolean?',
})

describe('answer checks', () => {
  it('passes a well-formed answer through', () => {
    const answer = { count: 3, next: null, unknown: 'kept' }
    expect(count(answer, 'GET /x')).toBe(answer)
    expect(count({ count: 0, next: 'a', extra: true }, 'GET /x').extra).toBe(true)
  })

  it('names the call and the field of a malformed answer', () => {
    expect(() => count({ count: '3', next: null }, 'GET /x')).toThrow(
      new MalformedAnswer('GET /x', 'field count should be number, got string'),
    )
    expect(() => count({ next: null }, 'GET /x')).toThrow('field count should be number, got undefined')
    expect(() => count({ count: 1, next: null, extra: null }, 'GET /x')).toThrow('field extra should be boolean?')
  })

  it('refuses what is not an object', () => {
    expect(() => count(null, 'GET /x')).toThrow('malformed answer from GET /x: expected an object, got null')
    expect(() => count([], 'GET /x')).toThrow('expected an object, got array')
  })

  it('checks every element of a list', () => {
    const list = arrayOf(count)
    expect(list([{ count: 1, next: null }], 'GET /xs')).toHaveLength(1)
    expect(() => list([{ count: 1, next: null }, { count: 'x' }], 'GET /xs')).toThrow(
      'malformed answer from GET /xs [1]: field count',
    )
    expect(() => list({}, 'GET /xs')).toThrow('expected an array, got object')
  })
})
