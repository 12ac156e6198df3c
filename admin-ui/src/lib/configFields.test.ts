import { describe, expect, it } from 'vitest'
import { configFields, envName, isPinned, isRestartOnly, parseText } from './configFields'

const effective = {
  server: { listen_addr: '127.0.0.1:0', strict_queues: false, tls_cert_path: null },
  auth: { api_keys: [{ name: 'w' }] },
  limits: { default_priority: 0, allowed_encodings: ['a', 'b'] },
  admin: { keys: [{ name: 'root', role: 'admin' }], session_ttl_ms: 1000 },
  queues: [{ name: 'q' }],
}

describe('config fields', () => {
  it('lists the scalar fields and leaves keys and queues to their own editors', () => {
    expect(configFields(effective).map((f) => `${f.path}:${f.kind}`)).toEqual([
      'server.listen_addr:string', 'server.strict_queues:bool', 'server.tls_cert_path:unset',
      'limits.default_priority:number', 'limits.allowed_encodings:list', 'admin.session_ttl_ms:number',
    ])
  })
  it('parses text back into the field type', () => {
    const [addr, strict, tls, prio, enc] = configFields(effective)
    expect(parseText(strict!, 'true')).toEqual({ value: true })
    expect(parseText(strict!, 'yes')).toHaveProperty('problem')
    expect(parseText(prio!, '7')).toEqual({ value: 7 })
    expect(parseText(prio!, 'x')).toHaveProperty('problem')
    expect(parseText(enc!, 'a, c')).toEqual({ value: ['a', 'c'] })
    expect(parseText(tls!, '')).toEqual({ value: null })
    expect(parseText(tls!, '/x.pem')).toEqual({ value: '/x.pem' })
    expect(parseText(addr!, '0.0.0.0:1')).toEqual({ value: '0.0.0.0:1' })
  })
  it('knows restart-only sections, env pins and env names', () => {
    expect(isRestartOnly('logging.level', ['logging'])).toBe(true)
    expect(isRestartOnly('limits.default_priority', ['limits.max_message_bytes'])).toBe(false)
    expect(isPinned('limits.default_priority', ['limits.default_priority'])).toBe(true)
    expect(isPinned('limits.default_priority', ['limits'])).toBe(true)
    expect(isPinned('limits.default_priority', ['limits.default_max_attempts'])).toBe(false)
    expect(envName('limits.default_priority')).toBe('SEPP_LIMITS__DEFAULT_PRIORITY')
  })
})
