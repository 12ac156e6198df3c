/** App-wide UI state: the colour theme, notices (toasts) and a clock for relative times. */
import { reactive, ref } from 'vue'

export type Theme = 'light' | 'dark'
const THEME_KEY = 'sepp-admin-theme'

function initialTheme(): Theme {
  const saved = localStorage.getItem(THEME_KEY)
  if (saved === 'light' || saved === 'dark') return saved
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

export const theme = ref<Theme>(initialTheme())

export function applyTheme(): void {
  document.documentElement.dataset.theme = theme.value
}

export function toggleTheme(): void {
  theme.value = theme.value === 'dark' ? 'light' : 'dark'
  localStorage.setItem(THEME_KEY, theme.value)
  applyTheme()
}

export interface Notice {
  id: number
  kind: 'ok' | 'error'
  text: string
}

export const notices = reactive<Notice[]>([])
let nextNotice = 1

export function notify(kind: Notice['kind'], text: string): void {
  const id = nextNotice++
  notices.push({ id, kind, text })
  setTimeout(() => dismiss(id), kind === 'error' ? 10_000 : 5000)
}

export function dismiss(id: number): void {
  const i = notices.findIndex((n) => n.id === id)
  if (i >= 0) notices.splice(i, 1)
}

/** Wall-clock now, ticking once a second, for "12 s ago" labels. */
export const now = ref(Date.now())
setInterval(() => {
  now.value = Date.now()
}, 1000)

/** Whether the command palette is open (Ctrl/Cmd-K). */
export const paletteOpen = ref(false)
