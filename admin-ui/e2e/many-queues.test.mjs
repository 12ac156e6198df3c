// Many queues: the server's frames carry the 500 busiest, so the dashboard says how many it
// shows of how many while its totals count every queue; a queue left out opens from the command
// palette, and a queue's page fetches that queue's own history.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { connect } from './grpc.mjs'
import { adminApi, launch, login, newPage, shot, until, untilText } from './browser.mjs'

const QUIET = 600
let server, grpc, browser

before(async () => {
  // A history budget of 1 MiB holds about 500 series of two minutes.
  server = await startServer({ extraToml: 'stats_history_bytes = 1048576' })
  grpc = connect(server.grpcAddr)
  browser = await launch()
  for (let n = 0; n < QUIET; n++) await grpc.enqueue(`quiet-${String(n).padStart(4, '0')}`, [{ job_type: 'one' }])
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await server?.stop()
})

test('with more queues than a frame carries, the dashboard shows the busiest and counts them all', async () => {
  const api = adminApi(server)
  // One busy queue: jobs in and out each second until the server ranks it first.
  const overview = await until(async () => {
    await grpc.enqueue('busy', Array.from({ length: 5 }, () => ({ job_type: 'work' })))
    for (const job of await grpc.reserve('busy', 5)) await grpc.ack(job)
    return api.get('/overview')
  }, (o) => 'busy' in o.history.queues && 'busy' in o.frame.queues, 'the busy queue to have a series of its own', 30_000)
  assert.equal(overview.frame.queue_count, QUIET + 1)
  assert.equal(overview.frame.truncated, true)
  assert.equal(Object.keys(overview.frame.queues).length, 500)
  assert.ok(overview.frame.queues.busy, 'the busy queue is in the frame')
  assert.ok(overview.history_info.queues_folded > 0, JSON.stringify(overview.history_info))

  const page = await newPage(browser)
  await login(page, server)
  await untilText(page.getByTestId('live-mode'), 'Live')
  await untilText(page.getByTestId('queues-shown'), `500 busiest of ${QUIET + 1}`)
  await untilText(page.getByTestId('total-ready'), String(QUIET), 'every quiet queue counted in the totals')
  assert.equal(await page.locator('[data-queue]').count(), 500)
  await shot(page, 'dashboard-many-queues')

  // A queue's page asks for that queue's history.
  const own = page.waitForResponse((r) => r.url().endsWith('/admin/api/v1/queues/busy/history') && r.ok())
  await page.locator('[data-queue="busy"] a.qname').click()
  const samples = (await (await own).json()).samples
  assert.ok(samples.length > 0, 'the busy queue has a series of its own')

  // A queue left out of the frame opens by name, with its depths.
  const left = Object.keys(overview.frame.queues).includes('quiet-0599') ? 'quiet-0000' : 'quiet-0599'
  assert.ok(!Object.keys(overview.frame.queues).includes(left))
  await page.keyboard.press('Control+k')
  await page.getByTestId('palette-input').fill(left)
  await page.keyboard.press('Enter')
  await untilText(page.getByTestId('queue-name'), left)
  await untilText(page.getByTestId('q-ready'), /^1$/, 'its one ready job')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})
