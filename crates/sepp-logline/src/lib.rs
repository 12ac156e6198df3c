//! Reading what a sepp server prints, for the programs that start one and wait on its output
//! (the test harnesses and the benchmark harness). The text log format carries ANSI colours even
//! when piped (docs/operations.md#log-lines), and a server started on port 0 names the port it bound in its
//! `queue server listening` line.

// No unsafe code here; a panic in the library is a bug with a message (`expect` says what was
// assumed).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

/// `line` without its ANSI escape sequences.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in '@'..='~'.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The port of the first `127.0.0.1:<digits>` in `line` (a line without ANSI codes).
pub fn loopback_port(line: &str) -> Option<u16> {
    let start = line.find("127.0.0.1:")? + "127.0.0.1:".len();
    let digits: String = line[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTENING: &str = "\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m queue server listening \u{1b}[3maddr\u{1b}[0m\u{1b}[2m=\u{1b}[0m127.0.0.1:40123 db_path=/tmp/x";

    #[test]
    fn a_coloured_listening_line_loses_its_codes_and_names_its_port() {
        let clean = strip_ansi(LISTENING);
        assert_eq!(clean, "2026  INFO queue server listening addr=127.0.0.1:40123 db_path=/tmp/x");
        assert_eq!(loopback_port(&clean), Some(40123));
    }

    #[test]
    fn a_line_without_a_loopback_address_names_no_port() {
        assert_eq!(loopback_port("queue server listening addr=0.0.0.0:50051"), None);
        assert_eq!(loopback_port("addr=127.0.0.1:"), None);
    }

    #[test]
    fn a_lone_escape_is_dropped_and_the_text_after_a_sequence_kept() {
        assert_eq!(strip_ansi("a\u{1b}b"), "ab");
        assert_eq!(strip_ansi("\u{1b}[1;32mgreen\u{1b}[0m"), "green");
    }
}
