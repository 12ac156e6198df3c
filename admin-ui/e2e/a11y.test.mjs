// Accessibility: axe-core finds no WCAG 2.1 A/AA violation on the main views, at 1280x800 and
// at 360x800, in the light and the dark theme.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { connect } from './grpc.mjs'
import { adminApi, axe, launch, login, newPage, until, NARROW, WIDE } from './browser.mjs'

let server, grpc, browser, jobId, deadPath

before(async () => {
  server = await startServer()
  grpc = connect(server.grpcAddr)
  browser = await launch()
  const api = adminApi(server)
  ;[jobId] = await grpc.enqueue('a11y', [{ job_type: 'check', data: '{"ok":true}', custom: { team: 'web' } }])
  await grpc.enqueue('a11y', [{ job_type: 'later', scheduled_at_ms: Date.now() + 600_000 }])
  await grpc.enqueue('a11y-held', [{ job_type: 'hold' }])
  await grpc.reserve('a11y-held', 1, 'axe-worker')
  await grpc.enqueue('a11y-dead', [{ job_type: 'fail' }])
  const [doomed] = await grpc.reserve('a11y-dead', 1, 'axe-worker')
  await grpc.deadLetter(doomed, 'broken')
  const dead = await until(() => api.peek('a11y-dead', 'dead_letter'), (p) => p.jobs.length === 1, 'a dead letter')
  deadPath = `/queues/a11y-dead/dead-letters/${encodeURIComponent(dead.jobs[0].key_b64)}`
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await server?.stop()
})

const VIEWS = [
  ['dashboard', '/', '[data-queue="a11y"]'],
  ['queue jobs', '/queues/a11y', 'table.jobs'],
  ['dead letters', '/queues/a11y-dead/jobs?state=dead_letter', 'table.jobs'],
  ['enqueue', '/queues/a11y/enqueue', '[data-testid="enqueue-submit"]'],
  ['settings', '/queues/a11y/settings', '[data-field="default_priority"]'],
  ['danger', '/queues/a11y/danger', '[data-testid="danger-purge"]'],
  ['job', () => `/jobs/${jobId}`, '[data-testid="payload"]'],
  ['dead letter', () => deadPath, '[data-testid="job-cause"]'],
  ['workers', '/workers', '[data-worker="axe-worker"]'],
  ['audit', '/audit', 'tbody tr'],
  ['config', '/config', '[data-path="limits.default_priority"]'],
]

for (const theme of ['light', 'dark']) {
  for (const viewport of [WIDE, NARROW]) {
    test(`no axe violations, ${theme} theme, ${viewport.width}x${viewport.height}`, async () => {
      const page = await newPage(browser, viewport, theme)
      await login(page, server)
      const problems = []
      for (const [name, path, ready] of VIEWS) {
        await page.goto(server.adminUrl + '/admin' + (typeof path === 'function' ? path() : path))
        await page.locator(ready).first().waitFor()
        for (const v of await axe(page)) problems.push(`${name}: ${v}`)
      }
      const loginPage = await newPage(browser, viewport, theme)
      await loginPage.goto(server.adminUrl + '/admin/login')
      await loginPage.getByLabel('Name').waitFor()
      for (const v of await axe(loginPage)) problems.push(`login: ${v}`)
      assert.deepEqual(problems, [])
      assert.deepEqual(page.errors, [])
      await loginPage.context().close()
      await page.context().close()
    })
  }
}
