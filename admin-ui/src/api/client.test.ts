import { afterEach, describe, expect, it, vi } from 'vitest'
import { api } from './client'
import { MalformedAnswer } from './validate'

function answer(body: unknown): void {
  vi.stubGlobal('fetch', async () => new Response(JSON.stringify(body), { status: 200 }))
}

describe('the API client', () => {
  afterEach(() => {
    vi.unstubAllGlobals()
    vi.restoreAllMocks()
  })

  it('returns a well-formed answer', async () => {
    answer({ count: 4 })
    await expect(api.countJobs('emails', 'ready')).resolves.toEqual({ count: 4 })
  })

  it('rejects a malformed answer with the call and the field, and logs it', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    answer({ count: 'four' })
    const call = api.countJobs('emails', 'ready')
    await expect(call).rejects.toBeInstanceOf(MalformedAnswer)
    await expect(call).rejects.toThrow(
      'malformed answer from GET /queues/emails/jobs:count: count should be integer, got string',
    )
    expect(logged).toHaveBeenCalledWith(
      'malformed answer from GET /queues/emails/jobs:count: count should be integer, got string',
    )
  })

  it('checks every queue of a listing', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined)
    answer([{ name: 'emails' }])
    await expect(api.queues()).rejects.toThrow('malformed answer from GET /queues: [0].declared is missing')
  })
})
