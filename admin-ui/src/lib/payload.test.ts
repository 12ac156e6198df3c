import { describe, expect, it } from 'vitest'
import { availableViews, decodeBase64, encodeBase64, hexDump, isBase64, render, utf8 } from './payload'

const enc = new TextEncoder()

describe('payload', () => {
  it('round-trips bytes through base64', () => {
    const data = new Uint8Array([0, 1, 2, 250, 255])
    expect(decodeBase64(encodeBase64(data))).toEqual(data)
    expect(encodeBase64(enc.encode('hi'))).toBe('aGk=')
  })
  it('accepts only well-formed base64', () => {
    expect(isBase64('aGk=')).toBe(true)
    expect(isBase64('aGk')).toBe(false)
    expect(isBase64('a*k=')).toBe(false)
  })
  it('offers JSON for JSON, text for text, hex only for binary', () => {
    expect(availableViews(enc.encode('{"a":1}'), 'application/json')).toEqual(['json', 'text', 'hex'])
    expect(availableViews(enc.encode('hello'), 'text/plain')).toEqual(['text', 'hex'])
    expect(availableViews(new Uint8Array([0xff, 0xfe]), '')).toEqual(['hex'])
    expect(utf8(new Uint8Array([0xc3]))).toBeNull()
  })
  it('pretty-prints JSON and dumps hex with offsets and ASCII', () => {
    expect(render(enc.encode('{"a":[1]}'), 'json')).toBe('{\n  "a": [\n    1\n  ]\n}')
    const dump = hexDump(enc.encode('<script>alert(1)</script>'))
    expect(dump.split('\n')[0]).toBe('00000000  3c 73 63 72 69 70 74 3e  61 6c 65 72 74 28 31 29  |<script>alert(1)|')
    expect(dump.split('\n')).toHaveLength(2)
  })
})
