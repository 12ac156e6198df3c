/**
 * Checks of the answers the admin API sends, made where the client receives them, against the
 * JSON Schema in schema.json (generated from the server's Rust types, like types.ts). An answer
 * that does not fit, at any depth, raises a `MalformedAnswer` naming the call and the JSON path
 * of the first bad field, instead of reaching the views as a wrongly typed value.
 *
 * The walker knows the part of JSON Schema that schemars emits for those types: `type` (one or
 * a list, `null` among them for an Option), `properties`, `required`, `items`,
 * `additionalProperties` (a map's values), `enum`, `const`, `anyOf`/`oneOf`/`allOf`, `$ref` to
 * `#/$defs/...`, `minimum` and `maximum`; `format`, `default` and other annotations are not
 * checked. Fields the schema does not name are accepted, even under `additionalProperties:
 * false`: a newer server may send more than this UI knows.
 */
import generated from './schema.json'

/** The answer types schema.json describes. */
export type DefName = keyof typeof generated.$defs

/** A schema: `true` accepts anything, `false` nothing. */
export type Schema = boolean | {
  type?: string | string[]
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  additionalProperties?: Schema
  enum?: unknown[]
  const?: unknown
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  $ref?: string
  minimum?: number
  maximum?: number
}

/** The keywords the walker checks or knowingly ignores; a test holds schema.json to them. */
export const KNOWN_KEYWORDS = [
  'type', 'properties', 'required', 'items', 'additionalProperties', 'enum', 'const', 'anyOf', 'oneOf', 'allOf',
  '$ref', 'minimum', 'maximum', 'format', 'default',
]

/** Where a value does not fit: its path segments, what it should be, what it is, and the keyword that failed. */
export interface Problem {
  path: (string | number)[]
  expected: string
  got: string
  keyword: string
}

/** Checks an answer and returns it as `T`. */
export type Check<T> = (value: unknown, what: string) => T

export class MalformedAnswer extends Error {
  /** The call, e.g. `GET /overview`. */
  readonly call: string
  /** The JSON path of the first bad field, e.g. `frame.queues.emails.totals.enqueued`; '' for the answer itself. */
  readonly path: string

  constructor(call: string, problem: Problem) {
    const path = formatPath(problem.path)
    const what = problem.keyword === 'required'
      ? 'is missing'
      : `should be ${problem.expected}, got ${problem.got}`
    super(`malformed answer from ${call}: ${path || 'the answer'} ${what}`)
    this.name = 'MalformedAnswer'
    this.call = call
    this.path = path
  }
}

/** `a.b[2]["odd key"]`. */
export function formatPath(path: (string | number)[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) out += out ? `.${part}` : part
    else out += `[${JSON.stringify(part)}]`
  }
  return out
}

/** A value's JSON kind, integers apart from other numbers. */
function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function fitsType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null': return value === null
    case 'boolean': return typeof value === 'boolean'
    case 'string': return typeof value === 'string'
    case 'integer': return Number.isInteger(value)
    case 'number': return typeof value === 'number' && Number.isFinite(value)
    case 'array': return Array.isArray(value)
    case 'object': return kindOf(value) === 'object'
    default: throw new Error(`schema type ${type} is not known to validate.ts`)
  }
}

function shown(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value)
}

/** The first place `value` does not fit `schema`, or null when it fits. */
export function validate(
  schema: Schema, value: unknown, defs: Record<string, Schema>, path: (string | number)[] = [],
): Problem | null {
  if (schema === true) return null
  if (schema === false) return { path, expected: 'nothing', got: kindOf(value), keyword: 'false' }
  if (schema.$ref !== undefined) {
    const name = schema.$ref.replace(/^#\/\$defs\//, '')
    const target = defs[name]
    if (target === undefined) throw new Error(`schema has no definition for ${schema.$ref}`)
    const problem = validate(target, value, defs, path)
    if (problem) return problem
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type]
    if (!types.some((type) => fitsType(value, type))) return { path, expected: types.join(' or '), got: kindOf(value), keyword: 'type' }
  }
  if (schema.const !== undefined && value !== schema.const) {
    return { path, expected: shown(schema.const), got: shown(value), keyword: 'const' }
  }
  if (schema.enum !== undefined && !schema.enum.includes(value)) {
    return { path, expected: `one of ${schema.enum.map(shown).join(', ')}`, got: shown(value), keyword: 'enum' }
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return { path, expected: `at least ${schema.minimum}`, got: shown(value), keyword: 'minimum' }
    if (schema.maximum !== undefined && value > schema.maximum) return { path, expected: `at most ${schema.maximum}`, got: shown(value), keyword: 'maximum' }
  }
  for (const part of schema.allOf ?? []) {
    const problem = validate(part, value, defs, path)
    if (problem) return problem
  }
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives) {
    const problem = firstFitting(alternatives, value, defs, path)
    if (problem) return problem
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (let at = 0; at < value.length; at++) {
      const problem = validate(schema.items, value[at], defs, [...path, at])
      if (problem) return problem
    }
  }
  if (kindOf(value) === 'object') {
    const object = value as Record<string, unknown>
    for (const field of schema.required ?? []) {
      if (!(field in object)) return { path: [...path, field], expected: 'present', got: 'nothing', keyword: 'required' }
    }
    const properties = schema.properties ?? {}
    for (const [field, fieldSchema] of Object.entries(properties)) {
      if (!(field in object)) continue
      const problem = validate(fieldSchema, object[field], defs, [...path, field])
      if (problem) return problem
    }
    // A map's values; a boolean here (false under deny_unknown_fields) does not refuse extra fields.
    const extra = schema.additionalProperties
    if (extra !== undefined && typeof extra !== 'boolean') {
      for (const [field, fieldValue] of Object.entries(object)) {
        if (field in properties) continue
        const problem = validate(extra, fieldValue, defs, [...path, field])
        if (problem) return problem
      }
    }
  }
  return null
}

/**
 * `anyOf` (and `oneOf`, taken as `anyOf`: extra fields may make several fit): null when one
 * alternative fits. Otherwise the problem found deepest (the alternative the value came
 * closest to; among those as deep, one whose constant did not differ, as a constant there is a
 * tag saying the alternative is not meant), or, when every alternative failed at the value
 * itself, one naming them all: `integer or null`.
 */
function firstFitting(
  alternatives: Schema[], value: unknown, defs: Record<string, Schema>, path: (string | number)[],
): Problem | null {
  const problems: Problem[] = []
  for (const alternative of alternatives) {
    const problem = validate(alternative, value, defs, path)
    if (!problem) return null
    problems.push(problem)
  }
  const depth = Math.max(...problems.map((p) => p.path.length))
  const deepest = problems.filter((p) => p.path.length === depth)
  const first = deepest.find((p) => p.keyword !== 'const') ?? deepest[0]!
  if (depth > path.length) return first
  const expected = [...new Set(problems.map((p) => p.expected))].join(' or ')
  return { path, expected, got: first.got, keyword: 'anyOf' }
}

const defs = generated.$defs as Record<string, Schema>

/** A check against `schema`, whose `$ref`s name definitions of schema.json. */
export function conforming<T>(schema: Schema): Check<T> {
  return (value, what) => {
    const problem = validate(schema, value, defs)
    if (problem) throw new MalformedAnswer(what, problem)
    return value as T
  }
}

/** A check against one answer type of schema.json. */
export function answer<T>(name: DefName): Check<T> {
  return conforming<T>({ $ref: `#/$defs/${name}` })
}

/** A check of a list of one answer type. */
export function listOf<T>(name: DefName): Check<T[]> {
  return conforming<T[]>({ type: 'array', items: { $ref: `#/$defs/${name}` } })
}

/** No check: for answers without a body. */
export function anything<T>(): Check<T> {
  return (value) => value as T
}
