//! Following the leader of a sepp cluster: which node a call goes to.
//!
//! In a cluster only the leader serves the queue service. Another node answers UNAVAILABLE,
//! having executed nothing, and names the leader's client address (`host:port`) in the
//! response metadata entry `sepp-leader` when it knows the leader (during an election it knows
//! none and names none). So every attempt of every call goes through [`Route::send`], which:
//!
//! - sends it to the current node;
//! - on UNAVAILABLE with `sepp-leader`, opens a channel to the leader with the settings of the
//!   configured one ([`Dialer`]), makes it the current node and sends the call there at once,
//!   at most [`MAX_REDIRECTS`] times per attempt; then the UNAVAILABLE is returned like any
//!   other. A re-sent call is not a retry (the follower executed nothing), so this holds for
//!   every call, reserve and dead-letter drains too;
//! - on UNAVAILABLE without `sepp-leader` from a leader it followed (it died, or lost its
//!   leadership), goes back to the configured address for the next attempt, which asks that
//!   node who leads now. The UNAVAILABLE itself is returned for the retry policy to judge.
//!
//! A client on a channel of the user's (`from_channel`) cannot dial another address: it returns
//! the UNAVAILABLE as it is.
//!
//! Switching is safe under concurrent calls: the current node sits behind a lock that is never
//! held across an await, and only a call that failed on the current node switches it (one
//! switch wins; the other calls go where it points). A channel switched away from closes when
//! the last call still running on it ends, as tonic channels close with their last clone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use prost::bytes::Bytes;
use tonic::{Code, Request, Response, Status};

use super::builder::Dialer;
use super::wire::{Node, Rpc};
use crate::otel;

/// The metadata entry in which a follower names the leader.
pub(crate) const LEADER_METADATA: &str = "sepp-leader";
/// Redirects one attempt of a call follows before its UNAVAILABLE is returned.
pub(crate) const MAX_REDIRECTS: u32 = 3;

/// The node calls go to now, and how to reach others.
pub(crate) struct Route {
    /// The configured address and how to dial; `None` for a channel of the user's.
    dialing: Option<(String, Dialer)>,
    current: RwLock<Arc<Node>>,
    /// Whether the client knows it talks to a cluster: a node named the leader, or
    /// `get_server_info` answered with `cluster`. Calls then ride a failover (see `retry`).
    in_cluster: AtomicBool,
    /// The client addresses of the cluster's members, from the last `get_server_info` that
    /// listed them (empty until then).
    members: RwLock<Vec<String>>,
}

impl Route {
    /// Calls go to `node` only (a channel of the user's).
    pub(crate) fn fixed(node: Node) -> Self {
        Self {
            dialing: None,
            current: RwLock::new(Arc::new(node)),
            in_cluster: AtomicBool::new(false),
            members: RwLock::default(),
        }
    }

    /// Calls start at `node`, the configured address `seed`, and follow the cluster's leader
    /// through channels `dialer` opens.
    pub(crate) fn following(seed: String, dialer: Dialer, node: Node) -> Self {
        Self {
            dialing: Some((seed, dialer)),
            current: RwLock::new(Arc::new(node)),
            in_cluster: AtomicBool::new(false),
            members: RwLock::default(),
        }
    }

    /// Whether the client knows it talks to a cluster and can follow its leader (a channel of
    /// the user's cannot, so retrying it through a failover would not reach the new leader).
    pub(crate) fn in_cluster(&self) -> bool {
        self.dialing.is_some() && self.in_cluster.load(Ordering::Relaxed)
    }

    /// Records that the client talks to a cluster.
    pub(crate) fn learned_cluster(&self) {
        self.in_cluster.store(true, Ordering::Relaxed);
    }

    /// Records the client addresses of the cluster's members (an empty list changes nothing).
    pub(crate) fn learned_members(&self, mut members: Vec<String>) {
        members.retain(|addr| !addr.is_empty());
        if members.is_empty() {
            return;
        }
        members.sort();
        members.dedup();
        *self.members.write().unwrap_or_else(PoisonError::into_inner) = members;
    }

    /// Where to ask who leads after `from` failed naming no leader: the member after it in the
    /// known members (in address order, round), or, while none are known, the configured
    /// address unless `from` is that.
    fn next_after(&self, from: &Arc<Node>) -> Option<String> {
        let seed = self.dialing.as_ref().map(|(seed, _)| seed.as_str())?;
        let members = self.members.read().unwrap_or_else(PoisonError::into_inner);
        let from = from.addr.as_deref();
        if members.is_empty() {
            return (from != Some(seed)).then(|| seed.to_owned());
        }
        let at = members.iter().position(|addr| Some(addr.as_str()) == from);
        let next = match at {
            Some(at) => &members[(at + 1) % members.len()],
            None => &members[0],
        };
        (Some(next.as_str()) != from).then(|| next.clone())
    }

    /// The node calls go to now.
    pub(crate) fn current(&self) -> Arc<Node> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// One attempt of `rpc` with the encoded request `body`, following up to [`MAX_REDIRECTS`]
    /// redirects within `deadline` (counted from now; the caller also bounds the whole).
    pub(crate) async fn send<Req, Resp>(
        &self,
        rpc: Rpc<Req, Resp>,
        body: Bytes,
        deadline: Duration,
    ) -> Result<Response<Resp>, Status>
    where
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let started = Instant::now();
        let mut redirects = 0;
        loop {
            let node = self.current();
            let mut request = Request::new(body.clone());
            request.set_timeout(deadline.saturating_sub(started.elapsed()));
            otel::inject(request.metadata_mut());
            let status = match node.unary(rpc, request).await {
                Ok(response) => return Ok(response),
                Err(status) if status.code() == Code::Unavailable => status,
                Err(status) => return Err(status),
            };
            let Some(leader) = leader_of(&status) else {
                self.lost(&node, &status, rpc.operation);
                return Err(status);
            };
            self.learned_cluster();
            if redirects >= MAX_REDIRECTS {
                tracing::warn!(
                    operation = rpc.operation,
                    redirects,
                    from = %node.name(),
                    to = %leader,
                    "gave up following the cluster leader"
                );
                return Err(status);
            }
            if !self.follow(&node, leader, rpc.operation) {
                return Err(status);
            }
            redirects += 1;
        }
    }

    /// After a stream on `node` failed or ended UNAVAILABLE: follows the leader it names, or
    /// asks another node who leads (as [`send`](Self::send) does for a call); whether the
    /// stream may be reopened at once (a leader was named and is current now).
    pub(crate) fn stream_unavailable(&self, node: &Arc<Node>, status: &Status, operation: &'static str) -> bool {
        match leader_of(status) {
            Some(leader) => {
                self.learned_cluster();
                self.follow(node, leader, operation)
            }
            None => {
                self.lost(node, status, operation);
                false
            }
        }
    }

    /// After `from` answered that the leader is at `leader`: whether the call goes again,
    /// to the node that is current then. Switches to the leader unless another call switched
    /// away from `from` already (then the current node stands).
    fn follow(&self, from: &Arc<Node>, leader: &str, operation: &'static str) -> bool {
        let Some((_, dialer)) = &self.dialing else {
            return false; // a channel of the user's cannot be pointed elsewhere
        };
        if from.addr.as_deref() == Some(leader) {
            return true; // the node names itself: ask it again
        }
        if !self.is_current(from) {
            return true; // another call has switched already: go where it points
        }
        let node = match dialer.dial(leader) {
            Ok(node) => node,
            Err(reason) => {
                tracing::warn!(operation, from = %from.name(), to = %leader, %reason, "cannot dial the cluster leader");
                return false;
            }
        };
        if self.switch(from, node) {
            tracing::info!(operation, to = %leader, from = %from.name(), "following the cluster leader");
        }
        true
    }

    /// After `from` answered UNAVAILABLE naming no leader (it is down, or it lost its
    /// leadership): the next attempt asks another node who leads now. That is the configured
    /// address when `from` was a leader this client followed, or, once the members are known
    /// (from `get_server_info`), the next member, so that a client given the leader's own
    /// address reaches the others when that leader dies.
    fn lost(&self, from: &Arc<Node>, status: &Status, operation: &'static str) {
        let Some((_, dialer)) = &self.dialing else { return };
        if !self.is_current(from) {
            return;
        }
        let Some(to) = self.next_after(from) else { return };
        let node = match dialer.dial(&to) {
            Ok(node) => node,
            Err(reason) => {
                tracing::warn!(operation, %to, %reason, "cannot dial another node of the cluster");
                return;
            }
        };
        if self.switch(from, node) {
            tracing::info!(
                operation,
                %to,
                from = %from.name(),
                message = status.message(),
                "the cluster node calls went to is unavailable; asking another who leads"
            );
        }
    }

    fn is_current(&self, node: &Arc<Node>) -> bool {
        Arc::ptr_eq(&self.current.read().unwrap_or_else(PoisonError::into_inner), node)
    }

    /// Makes `node` current if `from` still is; whether it did.
    fn switch(&self, from: &Arc<Node>, node: Node) -> bool {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        if !Arc::ptr_eq(&current, from) {
            return false;
        }
        *current = Arc::new(node);
        true
    }
}

/// The leader an UNAVAILABLE names in `sepp-leader`: a plain `host:port` (a value that is
/// empty, not ASCII, or has a scheme, a path or blanks counts as none).
pub(crate) fn leader_of(status: &Status) -> Option<&str> {
    let value = status.metadata().get(LEADER_METADATA)?.to_str().ok()?.trim();
    let plain = !value.is_empty() && !value.contains('/') && !value.contains(char::is_whitespace);
    plain.then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect(value: &str) -> Status {
        let mut status = Status::unavailable("this node is not the cluster's leader");
        status.metadata_mut().insert(LEADER_METADATA, value.parse().unwrap());
        status
    }

    fn addr(route: &Route) -> Option<String> {
        route.current().addr.clone()
    }

    #[tokio::test]
    async fn only_a_call_that_failed_on_the_current_node_switches_it() {
        let dialer = Dialer::plain();
        let seed = dialer.dial("127.0.0.1:1").unwrap();
        let route = Route::following("127.0.0.1:1".to_owned(), dialer, seed);
        let first = route.current();
        assert!(route.follow(&first, "127.0.0.1:2", "test"));
        assert_eq!(addr(&route).as_deref(), Some("127.0.0.1:2"));
        let leader = route.current();

        // A call that failed on the seed before the switch neither undoes nor repeats it.
        assert!(route.follow(&first, "127.0.0.1:3", "test"), "it goes again, to the current node");
        assert_eq!(addr(&route).as_deref(), Some("127.0.0.1:2"));
        route.lost(&first, &Status::unavailable("down"), "test");
        assert!(Arc::ptr_eq(&route.current(), &leader));

        // A node naming itself is asked again, without a switch.
        assert!(route.follow(&leader, "127.0.0.1:2", "test"));
        assert!(Arc::ptr_eq(&route.current(), &leader));

        // The followed leader naming no leader sends the next call to the seed; the seed naming
        // none changes nothing.
        route.lost(&leader, &Status::unavailable("down"), "test");
        assert_eq!(addr(&route).as_deref(), Some("127.0.0.1:1"));
        let back = route.current();
        route.lost(&back, &Status::unavailable("election"), "test");
        assert!(Arc::ptr_eq(&route.current(), &back));
        // A stale failure on the old leader does not move it either.
        route.lost(&leader, &Status::unavailable("down"), "test");
        assert!(Arc::ptr_eq(&route.current(), &back));
    }

    #[tokio::test]
    async fn a_fixed_route_never_switches() {
        let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy();
        let route = Route::fixed(Node::new(None, channel, super::super::ApiKeyInterceptor::none(), None));
        let node = route.current();
        assert!(!route.follow(&node, "127.0.0.1:2", "test"));
        route.lost(&node, &Status::unavailable("down"), "test");
        assert!(Arc::ptr_eq(&route.current(), &node));
    }

    #[test]
    fn the_leader_is_a_plain_host_and_port() {
        assert_eq!(leader_of(&redirect("10.0.0.2:50051")), Some("10.0.0.2:50051"));
        assert_eq!(leader_of(&redirect(" node-2:50051 ")), Some("node-2:50051"));
        for bad in ["", "http://node-2:50051", "node-2:50051/x", "node 2:50051"] {
            assert_eq!(leader_of(&redirect(bad)), None, "{bad:?}");
        }
        assert_eq!(leader_of(&Status::unavailable("election")), None);
    }
}
