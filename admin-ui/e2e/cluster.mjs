// A real cluster for the browser tests: three `sepp` nodes ($SEPP_BIN) in cluster mode, each with
// its admin UI, made a cluster with `sepp cluster init`; and a wait for the leader they agree on.
// The nodes have no admin keys (their loopback admin listeners need no sign-in): signing in
// records an audit entry, which only the leader can write.
import { execFile } from 'node:child_process'
import { startServer } from './server.mjs'
import { adminApi, until } from './browser.mjs'

function run(bin, args) {
  return new Promise((resolve, reject) => {
    execFile(bin, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`sepp ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`))
      else resolve(stdout)
    })
  })
}

/**
 * Starts `size` nodes (node ids 1..size) and initializes the cluster from node 1.
 * @returns {Promise<{ nodes: Array<Awaited<ReturnType<typeof startServer>> & { nodeId: number }>, stop: () => Promise<void> }>}
 */
export async function startCluster(size = 3) {
  const started = await Promise.allSettled(Array.from({ length: size }, (_, i) => startServer({
    adminKeys: false,
    extraToml: `
[cluster]
node_id = ${i + 1}
listen_addr = "127.0.0.1:0"
`,
  })))
  const nodes = started.filter((s) => s.status === 'fulfilled').map((s) => s.value)
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()))
  }
  try {
    const failed = started.find((s) => s.status === 'rejected')
    if (failed) throw failed.reason
    nodes.forEach((node, i) => {
      node.nodeId = i + 1
      if (!node.raftAddr) throw new Error(`node ${i + 1} reported no cluster listener:\n${node.logs.join('\n')}`)
    })
    await run(process.env.SEPP_BIN, ['cluster', 'init', '--node', nodes[0].raftAddr, ...nodes.slice(1).flatMap((n) => ['--peer', n.raftAddr])])
  } catch (err) {
    await stop()
    throw err
  }
  return { nodes, stop }
}

/**
 * Waits until one of `nodes` serves and every one of them names it leader; returns the leader
 * and the others.
 */
export async function waitForLeader(nodes) {
  const views = await until(
    () => Promise.all(nodes.map((n) => adminApi(n).get('/cluster'))),
    (all) => {
      const id = all[0].leader_id
      return id !== null && all.every((v) => v.leader_id === id) && all.some((v) => v.node_id === id && v.serving)
    },
    'the nodes to agree on a leader that serves',
    30_000,
  )
  const leaderId = views[0].leader_id
  return { leader: nodes.find((n) => n.nodeId === leaderId), followers: nodes.filter((n) => n.nodeId !== leaderId) }
}
