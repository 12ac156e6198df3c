import { describe, expect, it } from 'vitest'
import { bytes, count, duration, rate, relative } from './format'

describe('format', () => {
  it('writes counts compactly', () => {
    expect(count(0)).toBe('0')
    expect(count(9999)).toBe('9,999')
    expect(count(12_345)).toBe('12.3k')
    expect(count(1_500_000)).toBe('1.5M')
  })
  it('writes rates with up to two decimals', () => {
    expect(rate(0)).toBe('0')
    expect(rate(0.25)).toBe('0.25')
    expect(rate(3.5)).toBe('3.5')
    expect(rate(1234)).toBe('1,234')
  })
  it('writes sizes in binary units', () => {
    expect(bytes(512)).toBe('512 B')
    expect(bytes(4096)).toBe('4 KiB')
    expect(bytes(1536 * 1024)).toBe('1.5 MiB')
  })
  it('writes durations with their two largest units', () => {
    expect(duration(850)).toBe('850 ms')
    expect(duration(12_000)).toBe('12 s')
    expect(duration(200_000)).toBe('3 m 20 s')
    expect(duration(3_600_000)).toBe('1 h')
    expect(duration(2 * 86_400_000 + 4 * 3_600_000 + 5000)).toBe('2 d 4 h')
  })
  it('writes instants relative to now', () => {
    expect(relative(1000, 13_000)).toBe('12 s ago')
    expect(relative(60_000, 0)).toBe('in 1 m')
    expect(relative(500, 0)).toBe('now')
  })
})
