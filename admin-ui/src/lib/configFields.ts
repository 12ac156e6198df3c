/**
 * The scalar fields of the effective config as an editable list (`section.key` paths), with
 * the text an input shows and how that text turns back into a config value.
 */
import type { ConfigValue } from '../api/types'

export interface ConfigField {
  path: string
  section: string
  key: string
  value: ConfigValue
  kind: 'bool' | 'number' | 'string' | 'list' | 'unset'
}

/** Sections and keys edited elsewhere (API keys, admin keys, queues). */
const NOT_HERE = new Set(['auth.api_keys', 'admin.keys'])

function kindOf(value: unknown): ConfigField['kind'] | null {
  if (value === null || value === undefined) return 'unset'
  if (typeof value === 'boolean') return 'bool'
  if (typeof value === 'number') return 'number'
  if (typeof value === 'string') return 'string'
  if (Array.isArray(value) && value.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) return 'list'
  return null
}

export function configFields(effective: Record<string, unknown>): ConfigField[] {
  const out: ConfigField[] = []
  for (const [section, body] of Object.entries(effective)) {
    if (section === 'queues' || body === null || typeof body !== 'object' || Array.isArray(body)) continue
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      const path = `${section}.${key}`
      if (NOT_HERE.has(path)) continue
      const kind = kindOf(value)
      if (kind) out.push({ path, section, key, value: value as ConfigValue, kind })
    }
  }
  return out
}

export function textOf(field: ConfigField): string {
  if (field.value === null) return ''
  if (Array.isArray(field.value)) return field.value.join(', ')
  return String(field.value)
}

/** Turns edited text back into a value of the field's type; unset fields guess from the text. */
export function parseText(field: ConfigField, text: string): { value: ConfigValue } | { problem: string } {
  const t = text.trim()
  switch (field.kind) {
    case 'bool':
      return t === 'true' || t === 'false' ? { value: t === 'true' } : { problem: `${field.path}: true or false` }
    case 'number': {
      const n = Number(t)
      return t !== '' && Number.isFinite(n) ? { value: n } : { problem: `${field.path}: a number` }
    }
    case 'list':
      return { value: t === '' ? [] : t.split(',').map((s) => s.trim()).filter((s) => s !== '') }
    case 'string':
      return { value: text }
    case 'unset': {
      if (t === '') return { value: null }
      if (t === 'true' || t === 'false') return { value: t === 'true' }
      const n = Number(t)
      return { value: Number.isFinite(n) ? n : text }
    }
  }
}

/** Whether a path is restart-only, given the server's list (entries may name a whole section). */
export function isRestartOnly(path: string, restartOnly: string[]): boolean {
  const section = path.split('.')[0] ?? ''
  return restartOnly.includes(path) || restartOnly.includes(section)
}

export function isPinned(path: string, pinned: string[]): boolean {
  return pinned.some((p) => p === path || path.startsWith(p + '.') || p.startsWith(path + '.'))
}

/** The env var that sets a path, as the server reads them (`SEPP_SECTION__KEY`). */
export function envName(path: string): string {
  return 'SEPP_' + path.split('.').join('__').toUpperCase()
}
