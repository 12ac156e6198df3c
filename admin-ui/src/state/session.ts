/**
 * Who is signed in and what their role allows. Views ask `can(role)` before offering an action,
 * so a viewer is never shown a button that the server would refuse.
 */
import { computed, reactive } from 'vue'
import { api } from '../api/client'
import type { Role, Session } from '../api/types'

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 }

export const session = reactive<{ current: Session | null; checked: boolean }>({
  current: null,
  checked: false,
})

export function can(role: Role): boolean {
  return session.current !== null && RANK[session.current.role] >= RANK[role]
}

export const actorLabel = computed(() => {
  const s = session.current
  if (!s) return ''
  return s.auth_enabled ? `${s.name ?? '?'} (${s.role})` : `local (${s.role}, auth off)`
})

/** Asks the server who we are; null when not signed in. */
export async function refreshSession(): Promise<Session | null> {
  try {
    session.current = await api.session()
  } catch {
    session.current = null
  }
  session.checked = true
  return session.current
}

export async function signIn(name: string, key: string): Promise<void> {
  await api.login(name, key)
  await refreshSession()
}

export async function signOut(): Promise<void> {
  try {
    await api.logout()
  } finally {
    session.current = null
  }
}
