//! Throttling of failed authentication per client address, shared by the admin listener and
//! the gRPC listener (docs/operations.md#authentication-failures).
//!
//! A client is its IPv4 address, or the /64 network of its IPv6 address. Within a window of
//! [`WINDOW_MS`] that starts at its first failure, its first [`FREE_FAILURES`] failures are
//! answered at once, the next ones after [`FAILURE_DELAY`], and the [`BLOCK_AT`]th blocks it for
//! [`BLOCK_MS`]: until then every attempt it makes with a key (right or wrong) is refused
//! without being checked. Other clients are not affected. The table keeps at most
//! [`MAX_CLIENTS`] clients; a new one past that drops the expired entries, then the one that
//! failed least recently.
//!
//! Time comes in as `now_ms` so that tests pass it in.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::telemetry::Metrics;

/// Failures per window answered at once.
pub const FREE_FAILURES: u32 = 5;
/// The failure that blocks the client.
pub const BLOCK_AT: u32 = 10;
/// How long a window of counted failures lasts, from its first failure.
pub const WINDOW_MS: i64 = 60_000;
/// How long a failure past [`FREE_FAILURES`] waits before it is answered.
pub const FAILURE_DELAY: Duration = Duration::from_secs(1);
/// How long a blocked client is refused.
pub const BLOCK_MS: i64 = 60_000;
/// Clients tracked at most.
pub const MAX_CLIENTS: usize = 10_000;

/// Who failed: an IPv4 address, or the first 64 bits of an IPv6 address (one site or host can
/// hold a whole /64, so counting its addresses one by one would count nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    V4([u8; 4]),
    V6Net([u8; 8]),
}

impl Client {
    pub fn of(ip: IpAddr) -> Client {
        match ip {
            IpAddr::V4(v4) => Client::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Client::V4(v4.octets()),
                None => {
                    let mut net = [0u8; 8];
                    net.copy_from_slice(&v6.octets()[..8]);
                    Client::V6Net(net)
                }
            },
        }
    }

    pub fn of_peer(peer: SocketAddr) -> Client {
        Client::of(peer.ip())
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Client::V4(octets) => write!(f, "{}", std::net::Ipv4Addr::from(*octets)),
            Client::V6Net(net) => {
                let mut octets = [0u8; 16];
                octets[..8].copy_from_slice(net);
                write!(f, "{}/64", std::net::Ipv6Addr::from(octets))
            }
        }
    }
}

/// Which listener an attempt came to (the `listener` label of the metrics, and the logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listener {
    Admin,
    Grpc,
}

impl Listener {
    pub fn label(self) -> &'static str {
        match self {
            Listener::Admin => "admin",
            Listener::Grpc => "grpc",
        }
    }
}

/// How a failed attempt is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// As a failure, at once.
    Now,
    /// As a failure, after this long.
    Delayed(Duration),
    /// Refused: retry after this many seconds.
    Blocked { retry_after_s: u64 },
}

struct Entry {
    window_start_ms: i64,
    failures: u32,
    blocked_until_ms: Option<i64>,
    last_failure_ms: i64,
}

impl Entry {
    /// Neither blocked nor inside a window any more: it counts for nothing.
    fn expired(&self, now_ms: i64) -> bool {
        match self.blocked_until_ms {
            Some(until) => until <= now_ms,
            None => now_ms.saturating_sub(self.window_start_ms) >= WINDOW_MS,
        }
    }
}

/// The failures of each client.
pub struct AuthThrottle {
    clients: Mutex<HashMap<Client, Entry>>,
    capacity: usize,
    metrics: Option<Arc<Metrics>>,
}

fn retry_after_s(until_ms: i64, now_ms: i64) -> u64 {
    let left = until_ms.saturating_sub(now_ms).max(1) as u64;
    left.div_ceil(1000)
}

impl AuthThrottle {
    pub fn new(metrics: Option<Arc<Metrics>>) -> AuthThrottle {
        AuthThrottle::with_capacity(MAX_CLIENTS, metrics)
    }

    pub fn with_capacity(capacity: usize, metrics: Option<Arc<Metrics>>) -> AuthThrottle {
        AuthThrottle { clients: Mutex::new(HashMap::new()), capacity: capacity.max(1), metrics }
    }

    /// Before checking a key: `Some(seconds to wait)` when `client` is blocked.
    pub fn blocked(&self, client: Client, listener: Listener, now_ms: i64) -> Option<u64> {
        let mut clients = self.clients.lock().expect("throttle lock");
        let entry = clients.get(&client)?;
        let until = entry.blocked_until_ms?;
        if until <= now_ms {
            clients.remove(&client);
            return None;
        }
        drop(clients);
        self.count_throttled(listener, "refused");
        Some(retry_after_s(until, now_ms))
    }

    /// Counts a failed attempt of `client` and says how to answer it.
    pub fn failed(&self, client: Client, listener: Listener, now_ms: i64) -> Answer {
        if let Some(metrics) = &self.metrics {
            metrics.auth_failure(listener.label());
        }
        let answer = self.count_failure(client, listener, now_ms);
        match answer {
            Answer::Now => {}
            Answer::Delayed(_) => self.count_throttled(listener, "delayed"),
            Answer::Blocked { .. } => self.count_throttled(listener, "refused"),
        }
        answer
    }

    fn count_failure(&self, client: Client, listener: Listener, now_ms: i64) -> Answer {
        let mut clients = self.clients.lock().expect("throttle lock");
        if !clients.contains_key(&client) && clients.len() >= self.capacity {
            clients.retain(|_, entry| !entry.expired(now_ms));
            if clients.len() >= self.capacity
                && let Some(oldest) =
                    clients.iter().min_by_key(|(_, entry)| entry.last_failure_ms).map(|(client, _)| *client)
            {
                clients.remove(&oldest);
            }
        }
        let entry = clients.entry(client).or_insert(Entry {
            window_start_ms: now_ms,
            failures: 0,
            blocked_until_ms: None,
            last_failure_ms: now_ms,
        });
        if entry.expired(now_ms) {
            *entry = Entry { window_start_ms: now_ms, failures: 0, blocked_until_ms: None, last_failure_ms: now_ms };
        }
        entry.failures = entry.failures.saturating_add(1);
        entry.last_failure_ms = now_ms;
        if let Some(until) = entry.blocked_until_ms {
            // Checked before it was blocked, failed after (attempts in parallel).
            return Answer::Blocked { retry_after_s: retry_after_s(until, now_ms) };
        }
        if entry.failures >= BLOCK_AT {
            let until = now_ms.saturating_add(BLOCK_MS);
            entry.blocked_until_ms = Some(until);
            tracing::warn!(
                client = %client,
                listener = listener.label(),
                failures = entry.failures,
                window_s = WINDOW_MS / 1000,
                blocked_s = BLOCK_MS / 1000,
                "too many failed authentication attempts from one client; refusing its attempts for a while"
            );
            return Answer::Blocked { retry_after_s: retry_after_s(until, now_ms) };
        }
        if entry.failures > FREE_FAILURES { Answer::Delayed(FAILURE_DELAY) } else { Answer::Now }
    }

    fn count_throttled(&self, listener: Listener, action: &'static str) {
        if let Some(metrics) = &self.metrics {
            metrics.auth_throttled(listener.label(), action);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.clients.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(last: u8) -> Client {
        Client::of(IpAddr::from([192, 0, 2, last]))
    }

    const ADMIN: Listener = Listener::Admin;

    #[test]
    fn five_free_then_delayed_then_blocked_for_a_minute() {
        let throttle = AuthThrottle::new(None);
        let client = v4(1);
        for n in 1..=FREE_FAILURES {
            assert_eq!(throttle.failed(client, ADMIN, 1_000 + n as i64), Answer::Now, "failure {n}");
        }
        for n in FREE_FAILURES + 1..BLOCK_AT {
            assert_eq!(throttle.failed(client, ADMIN, 2_000), Answer::Delayed(FAILURE_DELAY), "failure {n}");
            assert_eq!(throttle.blocked(client, ADMIN, 2_000), None);
        }
        assert_eq!(throttle.failed(client, ADMIN, 3_000), Answer::Blocked { retry_after_s: 60 });
        assert_eq!(throttle.blocked(client, ADMIN, 3_000), Some(60));
        assert_eq!(throttle.blocked(client, ADMIN, 3_001), Some(60));
        assert_eq!(throttle.blocked(client, ADMIN, 62_000), Some(1));
        assert_eq!(throttle.blocked(client, ADMIN, 62_999), Some(1));
        // The block is over: a fresh window with its free failures.
        assert_eq!(throttle.blocked(client, ADMIN, 63_000), None);
        assert_eq!(throttle.failed(client, ADMIN, 63_000), Answer::Now);
    }

    #[test]
    fn other_clients_are_not_affected() {
        let throttle = AuthThrottle::new(None);
        for _ in 0..BLOCK_AT {
            throttle.failed(v4(1), ADMIN, 0);
        }
        assert!(throttle.blocked(v4(1), Listener::Grpc, 1).is_some(), "one table for both listeners");
        assert_eq!(throttle.blocked(v4(2), ADMIN, 1), None);
        assert_eq!(throttle.failed(v4(2), ADMIN, 1), Answer::Now);
    }

    #[test]
    fn a_window_ends_a_minute_after_its_first_failure() {
        let throttle = AuthThrottle::new(None);
        for _ in 0..BLOCK_AT - 1 {
            throttle.failed(v4(1), ADMIN, 0);
        }
        assert_eq!(throttle.failed(v4(1), ADMIN, WINDOW_MS - 1), Answer::Blocked { retry_after_s: 60 });
        let throttle = AuthThrottle::new(None);
        for _ in 0..BLOCK_AT - 1 {
            throttle.failed(v4(1), ADMIN, 0);
        }
        assert_eq!(throttle.failed(v4(1), ADMIN, WINDOW_MS), Answer::Now, "a new window");
    }

    #[test]
    fn an_attempt_checked_before_the_block_and_failed_after_it_is_refused() {
        let throttle = AuthThrottle::new(None);
        for _ in 0..BLOCK_AT {
            throttle.failed(v4(1), ADMIN, 0);
        }
        assert_eq!(throttle.failed(v4(1), ADMIN, 30_000), Answer::Blocked { retry_after_s: 30 });
    }

    #[test]
    fn ipv6_clients_are_their_64_bit_networks_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Client::of(a), Client::of(b));
        assert_ne!(Client::of(a), Client::of(c));
        assert_eq!(Client::of(a).to_string(), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(Client::of(mapped), v4(1));
        assert_eq!(v4(1).to_string(), "192.0.2.1");
    }

    #[test]
    fn a_full_table_drops_expired_entries_then_the_least_recent_failure() {
        let throttle = AuthThrottle::with_capacity(3, None);
        throttle.failed(v4(1), ADMIN, 0);
        throttle.failed(v4(2), ADMIN, 10);
        throttle.failed(v4(3), ADMIN, 20);
        throttle.failed(v4(1), ADMIN, 30);
        throttle.failed(v4(4), ADMIN, 40);
        assert_eq!(throttle.len(), 3);
        assert!(!throttle.clients.lock().unwrap().contains_key(&v4(2)), "v4(2) failed least recently");
        for _ in 0..FREE_FAILURES - 1 {
            throttle.failed(v4(1), ADMIN, 50);
        }
        assert_eq!(throttle.failed(v4(1), ADMIN, 50), Answer::Delayed(FAILURE_DELAY), "v4(1) was kept");
        // A minute later every entry has expired: a newcomer clears them all.
        throttle.failed(v4(5), ADMIN, WINDOW_MS + 100);
        assert_eq!(throttle.len(), 1);
    }
}
