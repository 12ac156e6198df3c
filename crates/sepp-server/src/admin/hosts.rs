//! Which names the admin listener answers to (docs/admin.md#host-and-origin), against DNS
//! rebinding: a page of another site whose name comes to resolve to this listener sends its own
//! name as `Host` and `Origin`, so both are checked against the listener's names, never against
//! each other.
//!
//! A name is allowed when it is
//! - `localhost`, a loopback address, or the address the connection reached, with the port the
//!   connection reached (a `Host` or `Origin` without a port means its scheme's, 80 or 443);
//! - or an `admin.allowed_hosts` entry: `host` with any port, or `host:port` with that one.

use std::net::{IpAddr, SocketAddr};

use sepp_config::HostPort;

/// The two ends of an admin connection, put in every request's extensions by the listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

/// Whether `name` is one of the listener's names. `default_port` is the port of a name that
/// gives none.
pub fn allowed(name: &HostPort, default_port: u16, local: SocketAddr, allowed_hosts: &[String]) -> bool {
    let port = name.port.unwrap_or(default_port);
    let builtin = name.host == "localhost"
        || name.host.parse::<IpAddr>().is_ok_and(|ip| {
            let ip = ip.to_canonical();
            ip.is_loopback() || ip == local.ip().to_canonical()
        });
    if builtin && port == local.port() {
        return true;
    }
    allowed_hosts
        .iter()
        .filter_map(|entry| HostPort::parse(entry))
        .any(|entry| entry.host == name.host && entry.port.is_none_or(|entry_port| entry_port == port))
}

/// The host and port an `Origin` names, with its scheme's port when it gives none; `None` for
/// `null` and anything that is not `http://` or `https://` with a host.
pub fn origin(origin: &str) -> Option<(HostPort, u16)> {
    let (rest, default_port) = if let Some(rest) = origin.strip_prefix("https://") {
        (rest, 443)
    } else {
        (origin.strip_prefix("http://")?, 80)
    };
    Some((HostPort::parse(rest)?, default_port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(addr: &str) -> SocketAddr {
        addr.parse().unwrap()
    }

    fn host(text: &str) -> HostPort {
        HostPort::parse(text).unwrap()
    }

    #[test]
    fn localhost_and_loopback_and_the_reached_address_need_the_listeners_port() {
        let at = local("127.0.0.1:9465");
        for name in ["localhost:9465", "127.0.0.1:9465", "127.0.0.2:9465", "[::1]:9465"] {
            assert!(allowed(&host(name), 80, at, &[]), "{name}");
        }
        for name in ["localhost:8080", "localhost", "127.0.0.1:80", "rebind.evil.example:9465", "10.0.0.5:9465"] {
            assert!(!allowed(&host(name), 80, at, &[]), "{name}");
        }
        assert!(allowed(&host("localhost"), 9465, at, &[]), "no port: the scheme's");
        let wildcard_bind = local("10.0.0.5:9465");
        assert!(allowed(&host("10.0.0.5:9465"), 80, wildcard_bind, &[]));
        assert!(allowed(&host("10.0.0.5:9465"), 80, local("[::ffff:10.0.0.5]:9465"), &[]), "dual stack");
        assert!(!allowed(&host("sepp.example.com:9465"), 80, wildcard_bind, &[]));
    }

    #[test]
    fn allowed_hosts_entries_match_any_port_or_theirs() {
        let at = local("10.0.0.5:9465");
        let list = ["sepp.example.com".to_owned(), "proxy.example.com:8443".to_owned(), "[2001:db8::5]".to_owned()];
        assert!(allowed(&host("sepp.example.com:9465"), 80, at, &list));
        assert!(allowed(&host("SEPP.example.com"), 443, at, &list));
        assert!(allowed(&host("proxy.example.com:8443"), 80, at, &list));
        assert!(!allowed(&host("proxy.example.com:9465"), 80, at, &list));
        assert!(!allowed(&host("proxy.example.com"), 443, at, &list));
        assert!(allowed(&host("[2001:db8::5]:1"), 80, at, &list));
        assert!(!allowed(&host("evil.sepp.example.com:9465"), 80, at, &list));
    }

    #[test]
    fn origins_give_their_scheme_port() {
        assert_eq!(origin("http://localhost:9465"), Some((host("localhost:9465"), 80)));
        assert_eq!(origin("https://sepp.example.com"), Some((host("sepp.example.com"), 443)));
        for text in ["null", "file://", "localhost:9465", "http://", "http://a/b", "ftp://a"] {
            assert_eq!(origin(text), None, "{text}");
        }
    }
}
