// Sign-in and the live dashboard: a wrong key is refused, the right one lands on the dashboard,
// which follows jobs flowing through the server over the event stream, and over polling when
// the stream is unavailable.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { connect } from './grpc.mjs'
import { adminApi, launch, login, newPage, shot, until, untilText, WIDE, NARROW } from './browser.mjs'

let server, grpc, browser

before(async () => {
  server = await startServer()
  grpc = connect(server.grpcAddr)
  browser = await launch()
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await server?.stop()
})

/** One round per stats frame: jobs in, most of them worked, some retried or dead-lettered. */
async function flow(rounds) {
  const api = adminApi(server)
  let seq = (await api.get('/overview?history=false')).frame.seq
  for (let round = 0; round < rounds; round++) {
    await grpc.enqueue('emails', Array.from({ length: 20 + 5 * (round % 3) }, () => ({ job_type: 'send' })))
    await grpc.enqueue('reports', Array.from({ length: 8 }, () => ({ job_type: 'render' })))
    await grpc.enqueue('webhooks', Array.from({ length: 4 }, () => ({ job_type: 'deliver' })))
    for (const job of await grpc.reserve('emails', 22)) await grpc.ack(job)
    const reports = await grpc.reserve('reports', 8)
    for (const job of reports.slice(0, 6)) await grpc.ack(job)
    await grpc.nack(reports[6], 'timeout')
    await grpc.deadLetter(reports[7], 'renderer crashed')
    const hooks = await grpc.reserve('webhooks', 3, 'hook-worker')
    await grpc.ack(hooks[0])
    seq = (await until(() => api.get('/overview?history=false'), (o) => o.frame.seq > seq, 'the next stats frame')).frame.seq
  }
}

test('a wrong key is refused and the right one signs in', async () => {
  const page = await newPage(browser)
  await page.goto(server.adminUrl + '/admin/')
  await page.waitForURL(/\/admin\/login/)
  await page.getByLabel('Name').fill('root')
  await page.getByLabel('Key').fill('not-the-key')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await untilText(page.getByTestId('login-error'), 'Invalid name or key')
  await shot(page, 'login')
  await page.getByLabel('Key').fill('root-admin-key-0001')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await untilText(page.getByTestId('actor'), 'root (admin)')
  assert.equal(new URL(page.url()).pathname, '/admin/')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('the dashboard follows jobs flowing through the server, live', async () => {
  const page = await newPage(browser)
  await login(page, server)
  await untilText(page.getByTestId('live-mode'), 'Live')
  await grpc.enqueue('emails', Array.from({ length: 7 }, (_, i) => ({ job_type: 'send', data: `{"n":${i}}` })))
  const card = page.locator('[data-queue="emails"]')
  await untilText(card.getByTestId('depth-ready'), /^7$/, 'the card to show 7 ready jobs')

  // A worker takes three and acks them while the page stays open: depths and rates move.
  const jobs = await grpc.reserve('emails', 3)
  assert.equal(jobs.length, 3)
  await untilText(card.getByTestId('depth-inflight'), /^3$/, '3 in flight')
  await untilText(card.getByTestId('depth-ready'), /^4$/, '4 ready')
  for (const job of jobs) await grpc.ack(job)
  await untilText(card.getByTestId('depth-inflight'), /^0$/, '0 in flight after the acks')
  await until(() => card.getByTestId('rate-acked').textContent(), (t) => Number(t) > 0, 'a non-zero acked rate')

  // Keep jobs flowing through three queues for a few seconds of history, then look.
  await flow(8)
  await until(() => page.locator('[data-queue="reports"]').getByTestId('depth-dead').textContent(), (t) => Number(t) >= 8, 'the dead letters of reports')
  await shot(page, 'dashboard')
  await page.setViewportSize(NARROW)
  await shot(page, 'dashboard')
  await page.setViewportSize(WIDE)
  await page.getByTestId('theme-toggle').click()
  await shot(page, 'dashboard-dark')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('without the event stream the dashboard falls back to polling the overview', async () => {
  const page = await newPage(browser)
  await page.route('**/admin/api/v1/events', (route) => route.abort())
  await login(page, server)
  await untilText(page.getByTestId('live-mode'), 'Polling')
  await grpc.enqueue('fallback', [{ job_type: 'x' }, { job_type: 'x' }])
  await untilText(page.locator('[data-queue="fallback"]').getByTestId('depth-ready'), /^2$/, 'the polled card to show 2 ready')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})
