//! [`TraceContext`]: a validated W3C `traceparent` (and optional `tracestate`) carried by a job
//! from its producer to its worker.

/// A W3C trace context: `traceparent` is `version-traceid-spanid-flags`
/// (`00-<32 hex>-<16 hex>-<2 hex>`), and `tracestate` is passed along untouched.
///
/// Producers normally never build one: with the `opentelemetry` feature the client stamps the
/// current span's context onto every enqueued job that has none.
///
/// ```
/// use sepp_client::TraceContext;
/// let trace = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
///     .unwrap()
///     .with_tracestate("vendor=value");
/// assert_eq!(trace.tracestate(), Some("vendor=value"));
/// assert!(TraceContext::new("not-a-traceparent").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// A trace context from a `traceparent` header value, validated: four dash-separated hex
    /// fields of 2, 32, 16 and 2 digits, with neither the trace id nor the span id all zeros.
    /// Upper-case hex is accepted.
    pub fn new(traceparent: impl Into<String>) -> Result<Self, TraceContextError> {
        let traceparent = traceparent.into();
        validate_traceparent(&traceparent)?;
        Ok(Self { traceparent, tracestate: None })
    }

    /// The same context with a `tracestate`; an empty string means none.
    pub fn with_tracestate(mut self, tracestate: impl Into<String>) -> Self {
        let tracestate = tracestate.into();
        self.tracestate = (!tracestate.is_empty()).then_some(tracestate);
        self
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` header value, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The 32-hex-digit trace id (lower case).
    pub fn trace_id(&self) -> String {
        self.traceparent[3..35].to_ascii_lowercase()
    }

    /// The 16-hex-digit id of the span that produced the job (lower case).
    pub fn span_id(&self) -> String {
        self.traceparent[36..52].to_ascii_lowercase()
    }

    /// Whether the producer sampled its trace (flag bit 0).
    pub fn is_sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|flags| flags & 1 == 1)
    }
}

/// Why a `traceparent` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceContextError {
    /// The value is not a W3C traceparent; the text says which rule it broke.
    #[error("invalid traceparent: {0}")]
    InvalidTraceparent(&'static str),
}

fn validate_traceparent(value: &str) -> Result<(), TraceContextError> {
    let invalid = TraceContextError::InvalidTraceparent;
    let fields: Vec<&str> = value.split('-').collect();
    let [version, trace_id, span_id, flags] = fields.as_slice() else {
        return Err(invalid("expected 4 dash-separated fields"));
    };
    let is_hex = |field: &str, len: usize| field.len() == len && field.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hex(version, 2) {
        return Err(invalid("version must be 2 hex digits"));
    }
    if !is_hex(trace_id, 32) {
        return Err(invalid("trace id must be 32 hex digits"));
    }
    if trace_id.bytes().all(|b| b == b'0') {
        return Err(invalid("trace id must not be all zeros"));
    }
    if !is_hex(span_id, 16) {
        return Err(invalid("span id must be 16 hex digits"));
    }
    if span_id.bytes().all(|b| b == b'0') {
        return Err(invalid("span id must not be all zeros"));
    }
    if !is_hex(flags, 2) {
        return Err(invalid("flags must be 2 hex digits"));
    }
    Ok(())
}

#[cfg(feature = "opentelemetry")]
mod otel {
    use std::str::FromStr;

    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    use opentelemetry::{Context, ContextGuard};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::TraceContext;

    impl TraceContext {
        /// The context of the current span: the current `tracing` span's OpenTelemetry context
        /// (through a `tracing-opentelemetry` layer), else the current OpenTelemetry context.
        /// `None` when neither holds a valid span.
        pub fn from_current_otel() -> Option<Self> {
            let from_tracing = tracing::Span::current().context();
            let span_context = from_tracing.span().span_context().clone();
            let span_context =
                if span_context.is_valid() { span_context } else { Context::current().span().span_context().clone() };
            Self::from_span_context(&span_context)
        }

        /// Builds a trace context from an OpenTelemetry span context, `None` if it is invalid.
        pub fn from_span_context(span_context: &SpanContext) -> Option<Self> {
            if !span_context.is_valid() {
                return None;
            }
            let traceparent = format!(
                "00-{}-{}-{:02x}",
                span_context.trace_id(),
                span_context.span_id(),
                span_context.trace_flags().to_u8()
            );
            let context = Self::new(traceparent).ok()?;
            Some(context.with_tracestate(span_context.trace_state().header()))
        }

        /// Makes this (remote) context the current OpenTelemetry context until the guard drops,
        /// so spans started meanwhile become its children.
        pub fn attach_to_otel(&self) -> ContextGuard {
            let span_context = self.otel_span_context().unwrap_or_else(SpanContext::empty_context);
            Context::current().with_remote_span_context(span_context).attach()
        }

        /// This context as an OpenTelemetry remote span context.
        pub fn otel_span_context(&self) -> Option<SpanContext> {
            let trace_id = TraceId::from_hex(&self.trace_id()).ok()?;
            let span_id = SpanId::from_hex(&self.span_id()).ok()?;
            let flags = u8::from_str_radix(&self.traceparent[53..55], 16).ok()?;
            let trace_state = self.tracestate().and_then(|state| TraceState::from_str(state).ok()).unwrap_or_default();
            let span_context = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, trace_state);
            span_context.is_valid().then_some(span_context)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_w3c_traceparent_is_accepted_and_split_into_its_ids() {
        let trace = TraceContext::new(VALID).unwrap();
        assert_eq!(trace.traceparent(), VALID);
        assert_eq!(trace.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(trace.span_id(), "00f067aa0ba902b7");
        assert!(trace.is_sampled());
        assert_eq!(trace.tracestate(), None);
    }

    #[test]
    fn upper_case_hex_is_accepted() {
        assert!(TraceContext::new(VALID.to_ascii_uppercase()).is_ok());
    }

    #[test]
    fn malformed_traceparents_are_refused_with_the_rule_they_break() {
        let cases = [
            ("", "expected 4 dash-separated fields"),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "expected 4 dash-separated fields"),
            ("0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "version must be 2 hex digits"),
            ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "trace id must be 32 hex digits"),
            ("00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", "trace id must be 32 hex digits"),
            ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", "trace id must not be all zeros"),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01", "span id must be 16 hex digits"),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "span id must not be all zeros"),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", "flags must be 2 hex digits"),
            ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", "expected 4 dash-separated fields"),
        ];
        for (value, reason) in cases {
            assert_eq!(TraceContext::new(value), Err(TraceContextError::InvalidTraceparent(reason)), "{value}");
        }
    }

    #[test]
    fn an_empty_tracestate_means_none() {
        let trace = TraceContext::new(VALID).unwrap().with_tracestate("");
        assert_eq!(trace.tracestate(), None);
        let trace = trace.with_tracestate("a=b");
        assert_eq!(trace.tracestate(), Some("a=b"));
    }

    #[test]
    fn unsampled_flags_are_read() {
        let trace = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        assert!(!trace.is_sampled());
    }

    #[cfg(feature = "opentelemetry")]
    #[test]
    fn converts_to_and_from_an_otel_span_context() {
        let trace = TraceContext::new(VALID).unwrap().with_tracestate("k=v");
        let span_context = trace.otel_span_context().unwrap();
        assert!(span_context.is_remote());
        assert_eq!(span_context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(TraceContext::from_span_context(&span_context), Some(trace));
    }
}
