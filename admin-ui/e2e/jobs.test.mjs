// Browsing jobs: each state with its own columns, cursor paging, filters by job type and custom
// metadata kept in the URL, job detail pages (payload views, custom metadata, lease, dead-letter
// cause and reason), the command palette, and payloads that hold markup shown as text.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { connect } from './grpc.mjs'
import { adminApi, launch, login, newPage, shot, until, untilText, NARROW, WIDE } from './browser.mjs'

let server, grpc, browser, api
const Q = 'orders'
const ids = {}
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'

before(async () => {
  server = await startServer()
  grpc = connect(server.grpcAddr)
  api = adminApi(server)
  browser = await launch()
  // 60 ready jobs (more than one page of 50), two kinds, with custom metadata.
  ids.ready = await grpc.enqueue(Q, Array.from({ length: 60 }, (_, i) => ({
    job_type: i % 3 === 0 ? 'refund' : 'charge',
    data: JSON.stringify({ order: 1000 + i, amount: i * 2.5 }),
    custom: { tenant: i % 2 === 0 ? 'acme' : 'globex', n: i },
  })))
  ids.scheduled = await grpc.enqueue(Q, [1, 2, 3].map((h) => ({ job_type: 'reminder', scheduled_at_ms: Date.now() + h * 3_600_000 })))
  ids.inflightJobs = await grpc.enqueue('payments', [{ job_type: 'capture', data: 'plain text payload' }, { job_type: 'capture' }])
  ids.inflight = await grpc.reserve('payments', 2, 'worker-a')
  const doomed = await grpc.enqueue('payments', [{ job_type: 'capture', data: Buffer.from([0, 1, 2, 0xff, 0xfe]), encoding: 'application/octet-stream' }])
  ids.deadId = doomed[0]
  const [toFail] = await grpc.reserve('payments', 1, 'worker-b')
  await grpc.deadLetter(toFail, 'card declined: <b>insufficient funds</b>')
  ids.xss = (await grpc.enqueue('evil', [{ job_type: 'x', data: XSS, encoding: 'text/html', custom: { note: '<script>alert(1)</script>' } }]))[0]
  await until(() => api.queue(Q), (q) => q.depths.ready === 60 && q.depths.scheduled === 3, 'the stats to show the queue')
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await server?.stop()
})

async function rowIds(page) {
  return page.locator('table.jobs tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.jobId))
}

test('ready jobs page by cursor, 50 at a time, in reservation order', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', `/queues/${Q}`)
  await untilText(page.getByTestId('page-info'), '50 shown')
  const first = await rowIds(page)
  assert.equal(first.length, 50)
  // The page is the server's reservation order, as its API lists it.
  assert.deepEqual(first, (await api.peek(Q, 'ready')).jobs.slice(0, 50).map((j) => j.id))
  await shot(page, 'queue-jobs')
  await page.getByTestId('next-page').click()
  await untilText(page.getByTestId('page-info'), '10 shown')
  const second = await rowIds(page)
  assert.equal(second.length, 10)
  assert.equal(new Set([...first, ...second]).size, 60, 'the two pages hold all 60 jobs, none twice')
  assert.ok(new URL(page.url()).searchParams.get('cursor'), 'the cursor is in the URL')
  assert.equal(await page.getByTestId('next-page').isDisabled(), true)
  await page.getByRole('button', { name: 'Previous' }).click()
  await untilText(page.getByTestId('page-info'), '50 shown')
  assert.deepEqual(await rowIds(page), first)
  await page.setViewportSize(NARROW)
  await shot(page, 'queue-jobs')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('each state lists its jobs with its own columns', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', `/queues/${Q}`)
  await page.locator('[data-state="scheduled"]').click()
  await untilText(page.getByTestId('page-info'), '3 shown')
  assert.deepEqual((await rowIds(page)).sort(), ids.scheduled.slice().sort())
  await untilText(page.locator('table.jobs thead'), 'Runs')
  await untilText(page.locator('table.jobs tbody tr').first(), /in \d+ m|in 5\d m|in 59 m/)

  await page.goto(server.adminUrl + '/admin/queues/payments/jobs?state=inflight')
  await untilText(page.getByTestId('page-info'), '2 shown')
  assert.deepEqual((await rowIds(page)).sort(), ids.inflight.map((j) => j.id).sort())
  await untilText(page.locator('table.jobs thead'), 'Lease expires')

  await page.locator('[data-state="dead_letter"]').click()
  await untilText(page.getByTestId('page-info'), '1 shown')
  await untilText(page.locator('table.jobs tbody'), 'card declined: <b>insufficient funds</b>')
  await untilText(page.locator('table.jobs tbody'), 'rejected')
  await shot(page, 'queue-dead-letters')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('filters by job type and custom metadata live in the URL and survive a reload', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', `/queues/${Q}`)
  await untilText(page.getByTestId('page-info'), '50 shown')
  await page.getByTestId('filter-job-type').fill('refund')
  await page.getByRole('button', { name: '+ Custom' }).click()
  await page.getByTestId('filter-key-0').fill('tenant')
  await page.getByTestId('filter-value-0').fill('acme')
  await page.getByRole('button', { name: 'Apply' }).click()
  // refund = every third job (i % 3 == 0), acme = even i: i in {0, 6, ..., 54} = 10 jobs.
  await untilText(page.getByTestId('page-info'), '10 shown')
  const url = new URL(page.url())
  assert.equal(url.searchParams.get('job_type'), 'refund')
  assert.equal(url.searchParams.get('custom.tenant'), 'acme')
  const expected = ids.ready.filter((_, i) => i % 6 === 0).sort()
  assert.deepEqual((await rowIds(page)).sort(), expected)
  await page.reload()
  await untilText(page.getByTestId('page-info'), '10 shown')
  assert.deepEqual((await rowIds(page)).sort(), expected)
  assert.equal(await page.getByTestId('filter-job-type').inputValue(), 'refund')
  await shot(page, 'queue-filtered')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('a job page shows its payload as JSON, text or hex, its metadata and its lease', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', `/jobs/${ids.ready[4]}`)
  await untilText(page.getByTestId('job-id'), ids.ready[4])
  await untilText(page.getByTestId('job-state'), 'ready')
  await untilText(page.getByTestId('job-type'), 'charge')
  await untilText(page.getByTestId('job-attempt'), '1 of 3')
  await untilText(page.getByTestId('custom-tenant'), 'acme')
  await untilText(page.getByTestId('payload'), '"order": 1004')
  await shot(page, 'job')
  await page.getByRole('button', { name: 'Hex' }).click()
  await untilText(page.getByTestId('payload'), '00000000  7b 22 6f 72')
  await page.getByRole('button', { name: 'Text' }).click()
  await untilText(page.getByTestId('payload'), '{"order":1004')
  await page.setViewportSize(NARROW)
  await shot(page, 'job')
  await page.setViewportSize(WIDE)

  const held = ids.inflight.find((j) => j.payload?.data?.length > 0) ?? ids.inflight[0]
  await page.goto(server.adminUrl + `/admin/jobs/${held.id}`)
  await untilText(page.getByTestId('job-state'), 'in flight')
  await untilText(page.getByTestId('job-lease'), /in \d+ m|in \d+ s/)

  // A dead letter: its cause, its reason (as text), and a binary payload as hex only.
  await page.goto(server.adminUrl + '/admin/queues/payments/jobs?state=dead_letter')
  await page.locator(`tr[data-job-id="${ids.deadId}"] a`).click()
  await untilText(page.getByTestId('job-cause'), 'rejected')
  await untilText(page.getByTestId('job-reason'), 'card declined: <b>insufficient funds</b>')
  await untilText(page.getByTestId('payload'), '00 01 02 ff fe')
  assert.equal(await page.getByRole('button', { name: 'JSON' }).count(), 0)
  const deepLink = page.url()
  await page.goto(deepLink)
  await untilText(page.getByTestId('job-cause'), 'rejected')
  await shot(page, 'dead-letter')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('the command palette opens a job by id from any page', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', '/config')
  await page.keyboard.press('Control+k')
  await page.getByTestId('palette-input').fill(ids.scheduled[1])
  await shot(page, 'palette')
  await page.keyboard.press('Enter')
  await untilText(page.getByTestId('job-id'), ids.scheduled[1])
  await untilText(page.getByTestId('job-state'), 'scheduled')
  await page.keyboard.press('Control+k')
  await page.getByTestId('palette-input').fill('00000000-0000-4000-8000-000000000000')
  await page.keyboard.press('Enter')
  await untilText(page.getByTestId('palette-error'), 'No ready, scheduled or in-flight job')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('markup in a payload, custom value or reason is shown as text, never run', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', `/jobs/${ids.xss}`)
  await untilText(page.getByTestId('payload'), XSS)
  await untilText(page.getByTestId('custom-note'), '<script>alert(1)</script>')
  await page.goto(server.adminUrl + '/admin/queues/evil')
  await untilText(page.locator('table.jobs tbody'), '<img src=x')
  assert.equal(await page.evaluate(() => window.__xss), undefined)
  assert.equal(await page.locator('main img, main script').count(), 0)
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('keyboard: j/k move through the list and Enter opens the job', async () => {
  const page = await newPage(browser)
  await login(page, server, 'admin', `/queues/${Q}`)
  await untilText(page.getByTestId('page-info'), '50 shown')
  await page.locator('h1').click()
  await page.keyboard.press('j')
  await page.keyboard.press('j')
  const second = await page.locator('tr.cursor').getAttribute('data-job-id')
  assert.equal(second, (await rowIds(page))[1])
  await page.keyboard.press('Enter')
  await untilText(page.getByTestId('job-id'), second)
  await page.keyboard.press('g')
  await page.keyboard.press('c')
  await page.waitForURL(/\/admin\/config$/)
  await page.context().close()
})
