//! Host names with an optional port, as `admin.allowed_hosts` lists them and as a request's
//! `Host` header or `Origin` names them. This module owns the syntax; the admin listener owns
//! the rule of which ones it answers (docs/admin.md#host-and-origin).

use std::net::Ipv6Addr;

/// A host and an optional port. The host is lowercase; an IPv6 literal is kept without its
/// brackets (`::1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub port: Option<u16>,
}

impl HostPort {
    /// Parses `name`, `name:port`, `1.2.3.4[:port]` or `[v6][:port]`. `None` for anything
    /// else: empty, a scheme, a path, user info, a bare IPv6 literal without brackets, a port
    /// that is not a number from 0 to 65535, or characters a host name cannot hold.
    pub fn parse(text: &str) -> Option<HostPort> {
        if let Some(rest) = text.strip_prefix('[') {
            let (literal, after) = rest.split_once(']')?;
            let address: Ipv6Addr = literal.parse().ok()?;
            let port = match after {
                "" => None,
                _ => Some(parse_port(after.strip_prefix(':')?)?),
            };
            return Some(HostPort { host: address.to_string(), port });
        }
        let (host, port) = match text.split_once(':') {
            Some((host, port)) => (host, Some(parse_port(port)?)),
            None => (text, None),
        };
        let valid = !host.is_empty()
            && host.len() <= 253
            && host.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_'));
        valid.then(|| HostPort { host: host.to_ascii_lowercase(), port })
    }
}

/// Digits only (no sign, no spaces), at most 65535.
fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(host: &str, port: Option<u16>) -> Option<HostPort> {
        Some(HostPort { host: host.into(), port })
    }

    #[test]
    fn names_addresses_and_ports_parse() {
        assert_eq!(HostPort::parse("Sepp.Example.com"), hp("sepp.example.com", None));
        assert_eq!(HostPort::parse("localhost:9465"), hp("localhost", Some(9465)));
        assert_eq!(HostPort::parse("10.0.0.5:80"), hp("10.0.0.5", Some(80)));
        assert_eq!(HostPort::parse("[::1]:9465"), hp("::1", Some(9465)));
        assert_eq!(HostPort::parse("[0:0::1]"), hp("::1", None));
    }

    #[test]
    fn anything_else_is_refused() {
        for text in [
            "",
            ":9465",
            "http://sepp.example.com",
            "sepp.example.com/admin",
            "user@sepp.example.com",
            "::1",
            "[::1",
            "[::1]x",
            "[nope]:1",
            "host:",
            "host:+1",
            "host:65536",
            "host: 1",
            "a b",
        ] {
            assert_eq!(HostPort::parse(text), None, "{text:?}");
        }
    }
}
