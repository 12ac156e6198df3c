//! Client-supplied text in log lines, cut to a bounded length.
//!
//! Queue names, job types, encodings, custom keys and nack reasons come from whoever can reach
//! the listener. Logged whole, a rejected batch of 10 MB names would write 10 MB of log; cut
//! here, each string costs at most [`MAX_LOGGED_CHARS`] characters plus a note of its real
//! length. This module owns that rule; it does not decide what is logged.

use std::fmt;

use sepp_core::Rejection;

/// The most characters of one client string a log line shows.
pub const MAX_LOGGED_CHARS: usize = 64;

/// The most jobs of one batch whose rejections are logged one line each; the rest are counted
/// in one summary line.
pub const MAX_REJECTIONS_LOGGED: usize = 3;

/// Displays a client string, cut after [`MAX_LOGGED_CHARS`] characters with its length in bytes
/// noted: `aaaa…(10000 bytes)`. Control characters are escaped, so a string cannot forge a line.
pub struct Bounded<'a>(pub &'a str);

impl fmt::Display for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.0.chars();
        for c in chars.by_ref().take(MAX_LOGGED_CHARS) {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        if chars.next().is_some() {
            write!(f, "…({} bytes)", self.0.len())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// A list of names (from the configuration, but possibly long): the first few, then a count.
struct BoundedList<'a>(&'a [String]);

impl fmt::Display for BoundedList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 8;
        write!(f, "[")?;
        for (index, name) in self.0.iter().take(SHOWN).enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{:?}", Bounded(name))?;
        }
        if self.0.len() > SHOWN {
            write!(f, ", … {} more", self.0.len() - SHOWN)?;
        }
        write!(f, "]")
    }
}

/// What a rejection says, for a log line, with every string bounded.
pub struct RejectionDetail<'a>(pub &'a Rejection);

impl fmt::Display for RejectionDetail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Rejection::UnknownQueue { queue } => write!(f, "queue {:?} is not declared", Bounded(queue)),
            Rejection::PayloadTooLarge { limit, actual } => write!(f, "payload is {actual} bytes, limit {limit}"),
            Rejection::EncodingNotAllowed { encoding, allowed } => {
                write!(f, "encoding {:?} is not in {}", Bounded(encoding), BoundedList(allowed))
            }
            Rejection::JobTypeNotAllowed { job_type, allowed } => {
                write!(f, "job type {:?} is not in {}", Bounded(job_type), BoundedList(allowed))
            }
            Rejection::CustomEntriesTooMany { limit, actual } => write!(f, "{actual} custom entries, limit {limit}"),
            Rejection::CustomMapTooLarge { limit, actual } => write!(f, "custom map is {actual} bytes, limit {limit}"),
            Rejection::CustomKeyTooLong { key, limit, actual } => {
                write!(f, "custom key {:?} is {actual} bytes, limit {limit}", Bounded(key))
            }
            Rejection::QueueNameTooLong { limit, actual } => write!(f, "queue name is {actual} bytes, limit {limit}"),
            Rejection::JobTypeNameTooLong { limit, actual } => write!(f, "job type is {actual} bytes, limit {limit}"),
            Rejection::IdempotencyKeyTooLong { limit, actual } => {
                write!(f, "idempotency key is {actual} bytes, limit {limit}")
            }
            Rejection::ScheduledTooFar { horizon_ms, actual_ms } => {
                write!(f, "scheduled at {actual_ms} ms, beyond the horizon of {horizon_ms} ms")
            }
            Rejection::InvalidRequest { message } => write!(f, "{}", Bounded(message)),
            Rejection::QueueFull { queue, limit } => write!(f, "queue {:?} holds its limit of {limit}", Bounded(queue)),
            Rejection::QueueClosing { queue } => write!(f, "queue {:?} is being deleted", Bounded(queue)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_string_is_cut_with_its_length_noted() {
        let long = "q".repeat(10_000);
        let shown = Bounded(&long).to_string();
        assert_eq!(shown, format!("{}…(10000 bytes)", "q".repeat(MAX_LOGGED_CHARS)));
    }

    #[test]
    fn a_short_string_is_shown_whole_and_control_characters_are_escaped() {
        assert_eq!(Bounded("emails").to_string(), "emails");
        assert_eq!(Bounded("a\nb").to_string(), "a\\nb");
    }

    #[test]
    fn cutting_respects_character_boundaries() {
        let long = "é".repeat(100);
        assert_eq!(Bounded(&long).to_string(), format!("{}…(200 bytes)", "é".repeat(MAX_LOGGED_CHARS)));
    }

    #[test]
    fn a_rejection_detail_bounds_every_string() {
        let rejection = Rejection::JobTypeNotAllowed {
            job_type: "t".repeat(5000),
            allowed: (0..20).map(|i| i.to_string()).collect(),
        };
        let detail = RejectionDetail(&rejection).to_string();
        assert!(detail.len() < 300, "{detail}");
        assert!(detail.contains("(5000 bytes)") && detail.contains("12 more"), "{detail}");
    }
}
