/**
 * What the UI says about cluster mode: each member's role, and why this node does not serve
 * the queue (and where the leader is) from `GET /cluster` and the last `not_leader` refusal.
 */
import type { ClusterMember, ClusterNode } from '../api/types'

export type MemberRole = 'leader' | 'voter' | 'learner'

export function memberRole(member: ClusterMember): MemberRole {
  return member.leader ? 'leader' : member.voter ? 'voter' : 'learner'
}

/** A refusal of a data route: the server's words and the leader's client address, if known. */
export interface Refusal {
  message: string
  leaderAddr: string | null
}

export interface NotServing {
  /**
   * `follower`: another node leads (its client address is known); `starting`: this node was
   * elected and is getting ready; `uninitialized`: no cluster was started yet; `no-leader`: an
   * election is running, or the leader is not known.
   */
  kind: 'follower' | 'starting' | 'uninitialized' | 'no-leader'
  leaderId: number | null
  leaderAddr: string | null
  /** The server's own words, from the last refusal ('' when none was seen). */
  detail: string
}

/** Null when this node serves (or is no cluster node); else why it does not. */
export function notServing(info: ClusterNode | null, refusal: Refusal | null): NotServing | null {
  if (info ? info.serving : refusal === null) return null
  const leaderId = info?.leader_id ?? null
  const leaderAddr = info?.leader_addr ?? refusal?.leaderAddr ?? null
  const detail = refusal?.message ?? ''
  let kind: NotServing['kind'] = 'no-leader'
  if (info && leaderId !== null && leaderId === info.node_id) kind = 'starting'
  else if (leaderAddr) kind = 'follower'
  else if (info && info.members.length === 0) kind = 'uninitialized'
  return { kind, leaderId, leaderAddr, detail }
}

/** A member's replication lag: a count of entries, or "unknown" where only the leader knows it. */
export function lagText(member: ClusterMember): string {
  if (member.replication_lag === null) return 'unknown'
  return member.replication_lag.toLocaleString('en-US')
}
