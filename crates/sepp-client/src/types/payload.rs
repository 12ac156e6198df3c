//! Job data ([`Payload`]), custom metadata values ([`Primitive`]) and [`Priority`].

use std::fmt;

/// Opaque job data and its encoding, for example a JSON document tagged `application/json`.
///
/// The server requires both fields to be non-empty: leave the payload out of a request instead
/// of sending an empty one. The client does not check this; the server rejects it.
///
/// ```
/// use sepp_client::Payload;
/// let payload = Payload::new(br#"{"to":"ada@example.com"}"#.to_vec(), "application/json");
/// assert_eq!(payload.encoding, "application/json");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Payload {
    /// The bytes, as the producer sent them.
    pub data: Vec<u8>,
    /// How to read `data`, usually a MIME type.
    pub encoding: String,
}

impl Payload {
    /// A payload of `data` read as `encoding`.
    pub fn new(data: impl Into<Vec<u8>>, encoding: impl Into<String>) -> Self {
        Self { data: data.into(), encoding: encoding.into() }
    }
}

/// One custom metadata value on a job: a string, a 64-bit integer, a double or a boolean.
///
/// ```
/// use sepp_client::Primitive;
/// assert_eq!(Primitive::from("eu"), Primitive::String("eu".into()));
/// assert_eq!(Primitive::from(3), Primitive::Int(3));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Primitive {
    /// A UTF-8 string.
    String(String),
    /// A signed 64-bit integer.
    Int(i64),
    /// A 64-bit float.
    Double(f64),
    /// A boolean.
    Bool(bool),
}

impl From<&str> for Primitive {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl From<String> for Primitive {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

impl From<i64> for Primitive {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl From<i32> for Primitive {
    fn from(value: i32) -> Self {
        Self::Int(i64::from(value))
    }
}

impl From<f64> for Primitive {
    fn from(value: f64) -> Self {
        Self::Double(value)
    }
}

impl From<bool> for Primitive {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::String(value) => f.write_str(value),
            Self::Int(value) => write!(f, "{value}"),
            Self::Double(value) => write!(f, "{value}"),
            Self::Bool(value) => write!(f, "{value}"),
        }
    }
}

/// A job priority from 0 (lowest) to 9 (highest); higher priorities are reserved first.
///
/// ```
/// use sepp_client::Priority;
/// assert_eq!(Priority::new(7).unwrap(), Priority::P7);
/// assert!(Priority::new(10).is_err());
/// assert_eq!(Priority::MAX.get(), 9);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Priority(u8);

impl Priority {
    /// The lowest priority, 0.
    pub const MIN: Self = Self(0);
    /// The highest priority, 9.
    pub const MAX: Self = Self(9);
    /// Priority 0, the lowest.
    pub const P0: Self = Self(0);
    /// Priority 1.
    pub const P1: Self = Self(1);
    /// Priority 2.
    pub const P2: Self = Self(2);
    /// Priority 3.
    pub const P3: Self = Self(3);
    /// Priority 4.
    pub const P4: Self = Self(4);
    /// Priority 5.
    pub const P5: Self = Self(5);
    /// Priority 6.
    pub const P6: Self = Self(6);
    /// Priority 7.
    pub const P7: Self = Self(7);
    /// Priority 8.
    pub const P8: Self = Self(8);
    /// Priority 9, the highest.
    pub const P9: Self = Self(9);

    /// The priority `value`, which must be in `0..=9`.
    pub const fn new(value: u8) -> Result<Self, PriorityOutOfRange> {
        if value <= Self::MAX.0 { Ok(Self(value)) } else { Err(PriorityOutOfRange(value)) }
    }

    /// The number, 0 to 9.
    pub const fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Priority {
    type Error = PriorityOutOfRange;

    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Priority> for u8 {
    fn from(priority: Priority) -> Self {
        priority.0
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A priority outside `0..=9`; carries the rejected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("priority {0} is out of range (expected 0..=9)")]
pub struct PriorityOutOfRange(pub u8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_zero_to_nine_are_valid_and_ten_is_not() {
        for value in 0..=9 {
            assert_eq!(Priority::new(value).unwrap().get(), value);
        }
        assert_eq!(Priority::new(10), Err(PriorityOutOfRange(10)));
        assert_eq!(Priority::try_from(255), Err(PriorityOutOfRange(255)));
        assert_eq!(Priority::MIN, Priority::P0);
        assert_eq!(Priority::MAX, Priority::P9);
        assert!(Priority::P9 > Priority::P1);
    }

    #[test]
    fn primitives_convert_from_rust_values() {
        assert_eq!(Primitive::from(String::from("a")), Primitive::String("a".into()));
        assert_eq!(Primitive::from(7i32), Primitive::Int(7));
        assert_eq!(Primitive::from(-7i64), Primitive::Int(-7));
        assert_eq!(Primitive::from(0.5), Primitive::Double(0.5));
        assert_eq!(Primitive::from(true), Primitive::Bool(true));
        assert_eq!(Primitive::from(true).to_string(), "true");
    }
}
