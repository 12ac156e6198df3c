/**
 * Payload bytes as the UI shows and edits them: base64 to bytes and back, UTF-8 text when the
 * bytes are valid UTF-8, pretty JSON when they parse, and a hex dump otherwise.
 */

export type PayloadView = 'json' | 'text' | 'hex'

export function decodeBase64(b64: string): Uint8Array {
  const binary = atob(b64)
  const out = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i)
  return out
}

export function encodeBase64(data: Uint8Array): string {
  let binary = ''
  const chunk = 0x8000
  for (let i = 0; i < data.length; i += chunk) {
    binary += String.fromCharCode(...data.subarray(i, i + chunk))
  }
  return btoa(binary)
}

/** Whether a string is well-formed standard base64 (padding required when the length needs it). */
export function isBase64(text: string): boolean {
  const compact = text.replace(/\s+/g, '')
  return compact.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(compact)
}

export function utf8(data: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(data)
  } catch {
    return null
  }
}

export function prettyJson(text: string): string | null {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return null
  }
}

/** Classic hex dump: offset, 16 bytes in hex, the printable ASCII of them. */
export function hexDump(data: Uint8Array, maxBytes = 64 * 1024): string {
  const lines: string[] = []
  const end = Math.min(data.length, maxBytes)
  for (let offset = 0; offset < end; offset += 16) {
    const row = data.subarray(offset, Math.min(offset + 16, end))
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0'))
    const left = hex.slice(0, 8).join(' ')
    const right = hex.slice(8).join(' ')
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('')
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${left.padEnd(23)}  ${right.padEnd(23)}  |${ascii}|`)
  }
  if (data.length > end) lines.push(`… ${data.length - end} more bytes`)
  return lines.join('\n')
}

/** The views that make sense for these bytes, best first. */
export function availableViews(data: Uint8Array, encoding: string): PayloadView[] {
  const text = utf8(data)
  if (text === null) return ['hex']
  const views: PayloadView[] = []
  if (prettyJson(text) !== null && (encoding.includes('json') || /^\s*[[{"]/.test(text))) views.push('json')
  views.push('text', 'hex')
  return views
}

export function render(data: Uint8Array, view: PayloadView): string {
  if (view === 'hex') return hexDump(data)
  const text = utf8(data) ?? ''
  if (view === 'json') return prettyJson(text) ?? text
  return text
}
