// Browser and admin-API helpers shared by the browser tests: Debian's chromium driven by
// playwright-core, sign-in as a role, waits on what the page shows, axe checks, screenshots.
import { chromium } from 'playwright-core'
import AxeBuilder from '@axe-core/playwright'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { KEYS } from './server.mjs'

export const WIDE = { width: 1280, height: 800 }
export const NARROW = { width: 360, height: 800 }

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium'
const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

/** Where screenshots go: SEPP_UI_SCREENSHOT_DIR (docs/admin-ui to refresh the docs), else test-results. */
export const SCREENSHOT_DIR = process.env.SEPP_UI_SCREENSHOT_DIR ?? new URL('../test-results/screenshots/', import.meta.url).pathname

/** Playwright gives every launch a fresh temporary profile (user data dir). */
export function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS })
}

/**
 * A new page at `viewport` whose uncaught errors, and answers or events the UI found malformed
 * (it logs each), fail the test that reads `errors`.
 */
export async function newPage(browser, viewport = WIDE, theme = 'light') {
  const context = await browser.newContext({ viewport, colorScheme: theme, reducedMotion: 'reduce' })
  const page = await context.newPage()
  page.errors = []
  page.on('pageerror', (err) => page.errors.push(String(err)))
  page.on('console', (message) => {
    if (message.type() === 'error' && message.text().includes('malformed answer')) page.errors.push(message.text())
  })
  return page
}

export async function login(page, server, role = 'admin', path = '/admin/') {
  const k = KEYS[role]
  await page.goto(server.adminUrl + '/admin/login?next=' + encodeURIComponent(path.replace(/^\/admin/, '') || '/'))
  await page.getByLabel('Name').fill(k.name)
  await page.getByLabel('Key').fill(k.key)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByTestId('actor').filter({ hasText: k.name }).waitFor({ state: 'attached' })
}

/** Polls until `read()` returns something `ok` accepts; fails with the last value seen. */
export async function until(read, ok, what, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      last = await read()
      if (ok(last)) return last
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${String(last)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Waits until the locator's text matches (a string it contains, or a RegExp). */
export function untilText(locator, expected, what = String(expected)) {
  const ok = (t) => (expected instanceof RegExp ? expected.test(t) : t.includes(expected))
  return until(() => locator.first().textContent({ timeout: 1000 }), (t) => t !== null && ok(t), what)
}

export async function shot(page, name) {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  const size = page.viewportSize().width <= 400 ? 'narrow' : 'wide'
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${size}.png`), fullPage: false })
}

/** Runs axe on the page; returns the violations as readable lines (empty when it passes). */
export async function axe(page) {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze()
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`)
}

/** The admin HTTP API as a given role, for setting up and checking state. */
export function adminApi(server, role = 'admin') {
  const key = KEYS[role].key
  async function call(method, path, body, headers = {}) {
    const response = await fetch(server.adminUrl + '/admin/api/v1' + path, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await response.text()
    const json = text ? JSON.parse(text) : null
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`)
    return json
  }
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    put: (path, body) => call('PUT', path, body),
    del: (path, headers) => call('DELETE', path, undefined, headers),
    queue: (name) => call('GET', `/queues/${encodeURIComponent(name)}`),
    peek: (name, state, extra = '') => call('GET', `/queues/${encodeURIComponent(name)}/jobs?state=${state}&limit=100${extra}`),
  }
}
