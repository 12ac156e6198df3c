import { describe, expect, it } from 'vitest'
import type { ClusterMember, ClusterNode } from '../api/types'
import { lagText, memberRole, notServing } from './cluster'

const member = (id: number, extra: Partial<ClusterMember> = {}): ClusterMember => ({
  id, addr: `127.0.0.1:${7000 + id}`, raft_addr: `127.0.0.1:${8000 + id}`, voter: true, leader: false, replication_lag: null, ...extra,
})

function node(extra: Partial<ClusterNode> = {}): ClusterNode {
  return {
    enabled: true, node_id: 2, role: 'follower', serving: false, term: 3, leader_id: 1, leader_addr: '127.0.0.1:7001',
    last_applied_index: 10, last_log_index: 10, snapshot_index: null,
    members: [member(1, { leader: true }), member(2), member(3)], ...extra,
  }
}

describe('cluster', () => {
  it('names each member by its role', () => {
    expect(memberRole(member(1, { leader: true }))).toBe('leader')
    expect(memberRole(member(2))).toBe('voter')
    expect(memberRole(member(3, { voter: false }))).toBe('learner')
  })
  it('writes a lag, or unknown off the leader', () => {
    expect(lagText(member(1, { replication_lag: 0 }))).toBe('0')
    expect(lagText(member(1, { replication_lag: 12_345 }))).toBe('12,345')
    expect(lagText(member(1))).toBe('unknown')
  })
  it('says nothing on a node that serves, or on a single node', () => {
    expect(notServing(node({ role: 'leader', serving: true, leader_id: 2 }), null)).toBeNull()
    expect(notServing(null, null)).toBeNull()
  })
  it('names the leader on a follower', () => {
    expect(notServing(node(), null)).toEqual({ kind: 'follower', leaderId: 1, leaderAddr: '127.0.0.1:7001', detail: '' })
  })
  it('falls back on the refusal before the cluster view is known', () => {
    const seen = notServing(null, { message: 'this node is not the leader', leaderAddr: '127.0.0.1:7003' })
    expect(seen).toEqual({ kind: 'follower', leaderId: null, leaderAddr: '127.0.0.1:7003', detail: 'this node is not the leader' })
  })
  it('tells an election, a node getting ready and a cluster not started apart', () => {
    expect(notServing(node({ role: 'candidate', leader_id: null, leader_addr: null }), null)?.kind).toBe('no-leader')
    expect(notServing(node({ role: 'leader', leader_id: 2, leader_addr: '127.0.0.1:7002' }), null)?.kind).toBe('starting')
    expect(notServing(node({ role: 'learner', leader_id: null, leader_addr: null, members: [] }), null)?.kind).toBe('uninitialized')
  })
})
