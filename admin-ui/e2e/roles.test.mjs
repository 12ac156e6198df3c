// Roles: a viewer sees every page read-only and is offered no action; an operator may act on
// jobs but not on settings, config or queues; the workers view lists who holds what.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { connect } from './grpc.mjs'
import { adminApi, launch, login, newPage, shot, until, untilText, NARROW } from './browser.mjs'

let server, grpc, browser, api, deadId

before(async () => {
  server = await startServer()
  grpc = connect(server.grpcAddr)
  api = adminApi(server)
  browser = await launch()
  await grpc.enqueue('mail', [{ job_type: 'send' }, { job_type: 'send' }, { job_type: 'send' }])
  const [job] = await grpc.reserve('mail', 1, 'mailer-1')
  await grpc.deadLetter(job, 'bounced')
  deadId = job.id
  await grpc.reserve('mail', 1, 'mailer-2')
  await until(() => api.queue('mail'), (q) => q.depths.dead_lettered === 1 && q.depths.inflight === 1, 'the jobs to settle')
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await server?.stop()
})

const MUTATING = ['bulk-requeue', 'bulk-delete', 'bulk-dead_letter', 'job-requeue', 'job-delete', 'job-dead-letter', 'settings-save', 'config-save', 'apikey-add', 'danger-purge', 'enqueue-submit']

async function offered(page) {
  const found = []
  for (const id of MUTATING) if (await page.getByTestId(id).count()) found.push(id)
  return found
}

test('a viewer sees everything and is offered nothing that changes it', async () => {
  const page = await newPage(browser)
  await login(page, server, 'viewer', '/queues/mail')
  await untilText(page.getByTestId('actor'), 'watcher (viewer)')
  const tabs = await page.getByRole('navigation', { name: 'Queue sections' }).getByRole('link').allTextContents()
  assert.deepEqual(tabs, ['Jobs', 'Settings'])
  await page.locator('.page-head .badge').first().waitFor()
  assert.equal(await page.getByTestId('pause-toggle').count(), 0, 'no pause button for a viewer')
  assert.equal(await page.getByRole('link', { name: 'Audit' }).count(), 0)
  await page.goto(server.adminUrl + '/admin/queues/mail/jobs?state=dead_letter')
  await page.locator(`tr[data-job-id="${deadId}"]`).waitFor()
  assert.equal(await page.locator('table.jobs input[type=checkbox]').count(), 0, 'no selection boxes')
  assert.deepEqual(await offered(page), [])
  await page.locator(`tr[data-job-id="${deadId}"] a`).click()
  await untilText(page.getByTestId('job-reason'), 'bounced')
  assert.deepEqual(await offered(page), [])
  await page.goto(server.adminUrl + '/admin/queues/mail/settings')
  await page.locator('[data-field="default_priority"]').waitFor()
  assert.equal(await page.locator('[data-field] input:not([disabled]), [data-field] textarea:not([disabled])').count(), 0)
  assert.deepEqual(await offered(page), [])
  await page.goto(server.adminUrl + '/admin/config')
  await page.locator('[data-path="limits.default_priority"]').waitFor()
  assert.equal(await page.locator('[data-path] input, [data-path] select').count(), 0)
  assert.deepEqual(await offered(page), [])
  await shot(page, 'config-viewer')
  // Deep links to sections the role cannot use say so instead of showing a form.
  await page.goto(server.adminUrl + '/admin/queues/mail/enqueue')
  await untilText(page.locator('main'), 'needs a role you do not have')
  assert.deepEqual(await offered(page), [])
  await page.goto(server.adminUrl + '/admin/audit')
  await untilText(page.locator('main'), 'for the admin role')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('an operator acts on jobs but not on settings, config or queues', async () => {
  const page = await newPage(browser)
  await login(page, server, 'operator', '/queues/mail/jobs?state=dead_letter')
  const tabs = await page.getByRole('navigation', { name: 'Queue sections' }).getByRole('link').allTextContents()
  assert.deepEqual(tabs, ['Jobs', 'Enqueue', 'Settings'])
  await page.locator(`tr[data-job-id="${deadId}"]`).waitFor()
  assert.deepEqual((await offered(page)).sort(), ['bulk-delete', 'bulk-requeue'])
  await page.goto(server.adminUrl + '/admin/queues/mail/settings')
  await page.locator('[data-field="default_priority"]').waitFor()
  assert.deepEqual(await offered(page), [])
  await page.goto(server.adminUrl + '/admin/config')
  await page.locator('[data-path="limits.default_priority"]').waitFor()
  assert.deepEqual(await offered(page), [])
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('the workers view lists recent workers, when they were seen and what they hold', async () => {
  const page = await newPage(browser)
  await login(page, server, 'viewer', '/workers')
  const row = page.locator('[data-worker="mailer-2"]')
  await untilText(row, 'mail')
  await untilText(row.locator('td.num'), /^1$/)
  await page.locator('[data-worker="mailer-1"]').waitFor()
  await shot(page, 'workers')
  await page.setViewportSize(NARROW)
  await shot(page, 'workers')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})
