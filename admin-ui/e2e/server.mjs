// Starts the real `sepp` binary ($SEPP_BIN) for a browser test: a temporary data directory and
// config file, both listeners on port 0, admin keys for each role. Reads the bound ports from the
// server's `queue server listening` and `admin UI listening` log lines (and, in cluster mode,
// `cluster node listening`).
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const KEYS = {
  admin: { name: 'root', key: 'root-admin-key-0001', role: 'admin' },
  operator: { name: 'ops', key: 'ops-operator-key-0002', role: 'operator' },
  viewer: { name: 'watcher', key: 'watcher-viewer-key-0003', role: 'viewer' },
}

const ANSI = /\x1b\[[0-9;]*m/g

function portFrom(line) {
  const m = /127\.0\.0\.1:(\d+)/.exec(line)
  return m ? Number(m[1]) : null
}

/**
 * `adminKeys: false` leaves out `[admin] keys`: the loopback admin listener then needs no sign-in.
 * @param {{ extraToml?: string, env?: Record<string,string>, adminKeys?: boolean }} [options]
 * @returns {Promise<{ grpcAddr: string, adminUrl: string, raftAddr: string | null, configPath: string, dir: string, logs: string[], stop: () => Promise<void> }>}
 */
export async function startServer(options = {}) {
  const bin = process.env.SEPP_BIN
  if (!bin) throw new Error('SEPP_BIN must name the sepp server binary to test against')
  const dir = mkdtempSync(join(tmpdir(), 'sepp-ui-e2e-'))
  const configPath = join(dir, 'sepp.toml')
  const keys = Object.values(KEYS)
    .map((k) => `  { name = "${k.name}", key = "${k.key}", role = "${k.role}" },`)
    .join('\n')
  writeFileSync(configPath, `# written by the admin UI browser tests
[server]
listen_addr = "127.0.0.1:0"
db_path = "${join(dir, 'data')}"

[storage]
persist_mode = "buffer"
dead_letter_retention_ms = 86400000
sweep_interval_ms = 200

[admin]
listen_addr = "127.0.0.1:0"
stats_history_ms = 120000
${options.adminKeys === false ? '' : `keys = [\n${keys}\n]`}
${options.extraToml ?? ''}
`)
  const child = spawn(bin, ['--config', configPath], {
    cwd: dir,
    env: { ...process.env, RUST_LOG: 'sepp=info', ...(options.env ?? {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs = []
  let grpcPort = null
  let adminPort = null
  let raftPort = null
  const ready = new Promise((resolve, reject) => {
    const onLine = (raw) => {
      const line = raw.replace(ANSI, '')
      logs.push(line)
      if (line.includes('queue server listening')) grpcPort = portFrom(line)
      if (line.includes('admin UI listening')) adminPort = portFrom(line)
      if (line.includes('cluster node listening')) raftPort = portFrom(line)
      if (grpcPort && adminPort) resolve()
    }
    let buffered = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk) => {
      buffered += chunk
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      lines.forEach(onLine)
    })
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk) => logs.push(chunk))
    child.on('exit', (code) => reject(new Error(`sepp exited with ${code} before listening:\n${logs.join('\n')}`)))
  })
  const timeout = new Promise((_, reject) => {
    const t = setTimeout(() => reject(new Error(`sepp did not report both listeners:\n${logs.join('\n')}`)), 30_000)
    ready.finally(() => clearTimeout(t)).catch(() => undefined)
  })
  await Promise.race([ready, timeout])
  return {
    grpcAddr: `127.0.0.1:${grpcPort}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    raftAddr: raftPort ? `127.0.0.1:${raftPort}` : null,
    configPath,
    dir,
    logs,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
