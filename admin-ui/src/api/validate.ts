/**
 * Checks of the answers the admin API sends, made where the client receives them: an answer
 * whose top-level fields are missing or of the wrong kind raises a `MalformedAnswer` naming the
 * call and the field, instead of reaching the views as a wrongly typed value. Only the top level
 * is checked; the nested shapes come from the same server build (see types.ts).
 */

/** A field's kind: a JSON type, optionally `|null`, and `?` when it may be absent. */
export type Kind =
  | 'string' | 'number' | 'boolean' | 'object' | 'array'
  | 'string|null' | 'number|null' | 'boolean|null' | 'object|null' | 'array|null'
  | 'string?' | 'number?' | 'boolean?' | 'object?' | 'array?'

/** Checks an answer and returns it as `T`. */
export type Check<T> = (value: unknown, what: string) => T

export class MalformedAnswer extends Error {
  constructor(what: string, problem: string) {
    super(`malformed answer from ${what}: ${problem}`)
    this.name = 'MalformedAnswer'
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function fits(value: unknown, kind: Kind): boolean {
  const optional = kind.endsWith('?')
  const [base, nullable] = kind.replace('?', '').split('|')
  if (value === undefined) return optional
  if (value === null) return nullable === 'null'
  return kindOf(value) === base
}

/** An object with at least `fields` of the given kinds. */
export function shape<T>(fields: Record<string, Kind>): Check<T> {
  return (value, what) => {
    if (kindOf(value) !== 'object') throw new MalformedAnswer(what, `expected an object, got ${kindOf(value)}`)
    const object = value as Record<string, unknown>
    for (const [field, kind] of Object.entries(fields)) {
      if (!fits(object[field], kind)) {
        throw new MalformedAnswer(what, `field ${field} should be ${kind}, got ${kindOf(object[field])}`)
      }
    }
    return value as T
  }
}

/** An array whose every element passes `item`. */
export function arrayOf<T>(item: Check<T>): Check<T[]> {
  return (value, what) => {
    if (!Array.isArray(value)) throw new MalformedAnswer(what, `expected an array, got ${kindOf(value)}`)
    value.forEach((element, at) => item(element, `${what} [${at}]`))
    return value as T[]
  }
}

/** No check: for answers without a body. */
export function anything<T>(): Check<T> {
  return (value) => value as T
}
