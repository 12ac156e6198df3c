// The queue page's tabs: a row that scrolls sideways when it is too narrow, without a scrollbar
// of its own beside the tabs (the active tab's underline overlapping the row's border once made
// the row one pixel taller than its box, so it scrolled vertically).
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { connect } from './grpc.mjs'
import { launch, login, newPage, shot, NARROW, WIDE } from './browser.mjs'

let server, grpc, browser

before(async () => {
  server = await startServer()
  grpc = connect(server.grpcAddr)
  browser = await launch()
  await grpc.enqueue('tabs', [{ job_type: 't' }])
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await server?.stop()
})

test('the queue page tabs do not scroll vertically, wide or narrow', async () => {
  for (const [viewport, name] of [[WIDE, 'wide'], [NARROW, 'narrow']]) {
    const page = await newPage(browser, viewport)
    await login(page, server, 'admin', '/queues/tabs')
    const tabs = page.getByRole('navigation', { name: 'Queue sections' })
    await tabs.waitFor()
    const box = await tabs.evaluate((nav) => ({ scrollHeight: nav.scrollHeight, clientHeight: nav.clientHeight }))
    await shot(page, 'queue-tabs')
    assert.ok(box.scrollHeight <= box.clientHeight, `the tabs overflow vertically (${name}): ${JSON.stringify(box)}`)
    assert.deepEqual(page.errors, [])
    await page.context().close()
  }
})
