// Cluster mode: three real nodes, each with its admin UI. The leader's cluster view lists every
// member with the leader marked and each member's replication lag; a follower's names the leader,
// says lags are unknown there, and its data pages say where the leader is instead of failing;
// when the leader stops, a follower's page follows the new leader by itself. A single node
// shows no cluster entry. axe finds nothing on these views.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer } from './server.mjs'
import { startCluster, waitForLeader } from './cluster.mjs'
import { connect } from './grpc.mjs'
import { adminApi, axe, launch, login, newPage, shot, until, untilText, NARROW, WIDE } from './browser.mjs'

let cluster, browser, grpc, leader, followers, jobId

before(async () => {
  browser = await launch()
  cluster = await startCluster(3)
  ;({ leader, followers } = await waitForLeader(cluster.nodes))
  grpc = connect(leader.grpcAddr)
  ;[jobId] = await grpc.enqueue('mail', [{ job_type: 'send' }, { job_type: 'send' }, { job_type: 'send' }])
  await grpc.reserve('mail', 1, 'mailer-1')
  const api = adminApi(leader)
  await until(() => api.queue('mail'), (q) => q.depths.ready === 2 && q.depths.inflight === 1, 'the leader to show the jobs')
})
after(async () => {
  await browser?.close()
  grpc?.close()
  await cluster?.stop()
})

/** Opens a page of a node's UI (no sign-in: the cluster's nodes have no admin keys). */
async function open(page, node, path) {
  await page.goto(node.adminUrl + '/admin' + path)
  await page.getByTestId('actor').filter({ hasText: 'local' }).waitFor({ state: 'attached' })
}

const members = (page) => page.locator('[data-testid="cluster-members"] tbody tr')

/** The member rows as { id, role, addr, lag }. */
async function memberRows(page) {
  return members(page).evaluateAll((rows) => rows.map((r) => ({
    id: Number(r.dataset.member),
    role: r.querySelector('[data-testid="member-role"]').textContent.trim(),
    addr: r.querySelector('[data-testid="member-addr"]').textContent.trim(),
    raft: r.querySelector('[data-testid="member-raft-addr"]').textContent.trim(),
    lag: r.querySelector('[data-testid="member-lag"]').textContent.trim(),
  })))
}

test("the leader's cluster view lists the three members, marks the leader and shows each lag", async () => {
  const page = await newPage(browser)
  await open(page, leader, '/')
  // The data pages work on the leader: no notice, the queue's card.
  await page.locator('[data-queue="mail"]').waitFor()
  assert.equal(await page.getByTestId('not-serving').count(), 0)
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Cluster' }).click()
  await untilText(page.getByTestId('cluster-role'), 'leader')
  await untilText(page.getByTestId('cluster-serving'), 'yes')
  await untilText(page.getByTestId('cluster-node-id'), `node ${leader.nodeId}`)
  await untilText(page.getByTestId('cluster-leader'), leader.grpcAddr)
  // Lags are known here: every member's is a count (0 once it has caught up, as they do idle).
  const rows = await until(() => memberRows(page), (r) => r.length === 3 && r.every((m) => m.lag === '0'), 'three caught-up members')
  assert.deepEqual(rows.map((m) => m.id), [1, 2, 3])
  for (const node of cluster.nodes) {
    const row = rows.find((m) => m.id === node.nodeId)
    assert.equal(row.addr, node.grpcAddr)
    assert.equal(row.raft, node.raftAddr)
    assert.equal(row.role, node === leader ? 'leader' : 'voter')
  }
  assert.match(await page.locator(`tr[data-member="${leader.nodeId}"]`).textContent(), /this node/)
  await untilText(page.getByTestId('node-role'), 'leader')
  assert.doesNotMatch(await page.getByTestId('node-role').getAttribute('class'), /warn/)
  await shot(page, 'cluster')
  await page.setViewportSize(NARROW)
  await members(page).first().waitFor()
  // On a phone the pages fit the navigation without a hidden scroll, and the table its width.
  const fits = (selector) => page.locator(selector).first().evaluate((el) => el.scrollWidth <= el.clientWidth)
  assert.equal(await fits('nav.nav'), true, 'the navigation fits 360 pixels')
  assert.equal(await fits('.table-wrap'), true, 'the members table fits 360 pixels')
  await shot(page, 'cluster')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test("a follower's cluster view names the leader, and its data pages say where the leader is", async () => {
  const follower = followers[0]
  const page = await newPage(browser)
  await open(page, follower, '/cluster')
  await untilText(page.getByTestId('cluster-role'), 'follower')
  await untilText(page.getByTestId('cluster-serving'), 'no')
  await untilText(page.getByTestId('cluster-leader'), `node ${leader.nodeId}`)
  await untilText(page.getByTestId('cluster-leader'), leader.grpcAddr)
  const rows = await until(() => memberRows(page), (r) => r.length === 3, 'three members')
  assert.deepEqual(rows.map((m) => [m.id, m.role]), cluster.nodes.map((n) => [n.nodeId, n === leader ? 'leader' : 'voter']))
  assert.deepEqual(rows.map((m) => m.lag), ['unknown', 'unknown', 'unknown'], 'lags are known on the leader only')
  await untilText(page.locator('main'), 'known on the leader only')
  await untilText(page.getByTestId('node-role'), 'follower')

  // Every page that needs the queue says where the leader is, instead of an error.
  const dataPages = ['/', '/queues/mail', '/queues/mail/jobs?state=inflight', `/jobs/${jobId}`, '/workers', '/schedules', '/audit']
  for (const path of dataPages) {
    await page.goto(follower.adminUrl + '/admin' + path)
    const notice = page.getByTestId('not-leader')
    await untilText(notice, `This node follows the cluster's leader at ${leader.grpcAddr}`, `the notice on ${path}`)
    await untilText(notice, 'open the admin UI of the leader to see and change jobs', `the notice on ${path}`)
    assert.equal(await page.locator('.callout.error, [data-testid="notice-error"]').count(), 0, `no error on ${path}`)
    if (path === '/') await shot(page, 'not-leader')
  }
  // The pages about this node itself still work on a follower.
  await page.goto(follower.adminUrl + '/admin/config')
  await page.locator('[data-path="limits.default_priority"]').waitFor()
  assert.equal(await page.getByTestId('not-serving').count(), 0)
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Cluster' }).click()
  await untilText(page.getByTestId('cluster-role'), 'follower')
  await page.goto(follower.adminUrl + '/admin/')
  await page.setViewportSize(NARROW)
  await untilText(page.getByTestId('not-leader'), leader.grpcAddr)
  await shot(page, 'not-leader')
  // On a phone the node's role in the top row leads to the cluster view.
  await page.getByTestId('node-role').click()
  await untilText(page.getByTestId('cluster-role'), 'follower')
  assert.equal(await page.locator('.table-wrap').evaluate((el) => el.scrollWidth <= el.clientWidth), true, 'the table fits 360 pixels')
  assert.deepEqual(page.errors, [])
  await page.context().close()
})

test('the cluster view and the follower notice pass axe, in both themes, wide and narrow', async () => {
  const problems = []
  for (const theme of ['light', 'dark']) {
    for (const viewport of [WIDE, NARROW]) {
      const where = `${theme} ${viewport.width}x${viewport.height}`
      const onLeader = await newPage(browser, viewport, theme)
      await open(onLeader, leader, '/cluster')
      await untilText(onLeader.getByTestId('cluster-role'), 'leader')
      await members(onLeader).nth(2).waitFor()
      for (const v of await axe(onLeader)) problems.push(`leader cluster view, ${where}: ${v}`)
      const onFollower = await newPage(browser, viewport, theme)
      await open(onFollower, followers[0], '/cluster')
      await untilText(onFollower.getByTestId('cluster-role'), 'follower')
      await members(onFollower).nth(2).waitFor()
      for (const v of await axe(onFollower)) problems.push(`follower cluster view, ${where}: ${v}`)
      await onFollower.goto(followers[0].adminUrl + '/admin/queues/mail')
      await onFollower.getByTestId('not-leader').waitFor()
      for (const v of await axe(onFollower)) problems.push(`follower notice, ${where}: ${v}`)
      assert.deepEqual([...onLeader.errors, ...onFollower.errors], [])
      await onLeader.context().close()
      await onFollower.context().close()
    }
  }
  assert.deepEqual(problems, [])
})

test('a single node shows no cluster entry, and its cluster page says it is a single node', async () => {
  const single = await startServer()
  try {
    const page = await newPage(browser)
    await login(page, single, 'admin', '/')
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Config' }).waitFor()
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Cluster' }).count(), 0)
    assert.equal(await page.getByTestId('node-role').count(), 0)
    await page.goto(single.adminUrl + '/admin/cluster')
    await untilText(page.getByTestId('cluster-single'), 'single node')
    assert.deepEqual(await axe(page), [])
    assert.deepEqual(page.errors, [])
    await page.context().close()
  } finally {
    await single.stop()
  }
})

// Last: it stops the leader.
test("when the leader stops, a follower's page follows the new leader by itself", async () => {
  const watcher = followers[0]
  const page = await newPage(browser)
  await open(page, watcher, '/')
  await untilText(page.getByTestId('not-leader'), leader.grpcAddr)
  await leader.stop()
  const next = await waitForLeader(followers)
  if (next.leader === watcher) {
    // This node leads now: the page shows the queue again, with the jobs the old leader took.
    await page.locator('[data-queue="mail"]').waitFor({ timeout: 20_000 })
    assert.equal(await page.getByTestId('not-serving').count(), 0)
    await untilText(page.getByTestId('node-role'), 'leader')
  } else {
    await untilText(page.getByTestId('not-leader'), next.leader.grpcAddr, 'the notice to name the new leader')
  }
  assert.deepEqual(page.errors, [])
  await page.context().close()
})
