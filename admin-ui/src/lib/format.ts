/** How numbers, sizes, instants and durations are written in the UI. */

export function count(n: number): string {
  if (!Number.isFinite(n)) return '–'
  const abs = Math.abs(n)
  if (abs < 10_000) return Math.round(n).toLocaleString('en-US')
  if (abs < 1_000_000) return trim(n / 1000) + 'k'
  if (abs < 1_000_000_000) return trim(n / 1_000_000) + 'M'
  return trim(n / 1_000_000_000) + 'G'
}

function trim(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1).replace(/\.0$/, '') : n.toFixed(2).replace(/\.?0+$/, '')
}

export function rate(perSecond: number): string {
  if (perSecond === 0) return '0'
  if (perSecond < 10) return perSecond.toFixed(perSecond < 1 ? 2 : 1).replace(/\.?0+$/, '')
  return count(perSecond)
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${trim(n / 1024)} KiB`
  if (n < 1024 * 1024 * 1024) return `${trim(n / (1024 * 1024))} MiB`
  return `${trim(n / (1024 * 1024 * 1024))} GiB`
}

/** A duration in ms as its two largest units: `850 ms`, `12 s`, `3 m 20 s`, `2 d 4 h`. */
export function duration(ms: number): string {
  const abs = Math.abs(ms)
  if (abs < 1000) return `${Math.round(abs)} ms`
  const units: [string, number][] = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]]
  const parts: string[] = []
  let rest = abs
  for (const [name, size] of units) {
    if (rest >= size || parts.length > 0) {
      const amount = Math.floor(rest / size)
      rest -= amount * size
      if (amount > 0 || parts.length > 0) parts.push(`${amount} ${name}`)
      if (parts.length === 2) break
    }
  }
  return parts.filter((p) => !p.startsWith('0 ')).join(' ')
}

/** An instant relative to `now`: `12 s ago`, `in 3 m 20 s`. */
export function relative(ms: number, now: number): string {
  const delta = ms - now
  if (Math.abs(delta) < 1000) return 'now'
  return delta < 0 ? `${duration(delta)} ago` : `in ${duration(delta)}`
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0')
}

/** An instant as local `YYYY-MM-DD HH:MM:SS.mmm`. */
export function instant(ms: number): string {
  const d = new Date(ms)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

/** A local time for `<input type="datetime-local">` (minute precision is what browsers edit). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

export function fromLocalInput(text: string): number | null {
  if (!text) return null
  const ms = new Date(text).getTime()
  return Number.isNaN(ms) ? null : ms
}

export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id
}
