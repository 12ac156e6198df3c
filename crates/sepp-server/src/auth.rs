//! API-key authentication of QueueService calls (docs/protocol.md#authentication). The health service is not gated.
//!
//! The key set is read from the live configuration on every call, so hot reloads apply at once.
//! A presented key is compared with every configured key through their SHA-256 digests in
//! constant time, so neither the content nor the length of a key shows in the time taken.
//! Wrong keys count against the client's address in the [`AuthThrottle`]: past a few a minute
//! the answer waits, then the client's calls with a key are refused with `RESOURCE_EXHAUSTED`
//! and a `retry-after` (seconds) for a while. A call without a key is not a guess and is not
//! counted.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::Either;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::codegen::http;
use tonic::metadata::{MetadataMap, MetadataValue};
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
use tonic::{Code, Status};

use crate::live::LiveConfig;
use crate::throttle::{Answer, AuthThrottle, Client, Listener};
use sepp_engine::Clock;

const MISSING: &str = "missing API key; expected an `authorization: Bearer <key>` header";
const INVALID: &str = "invalid API key";

/// Whether `presented` is `key`, in time that depends on neither (both are hashed first).
pub fn same_key(presented: &[u8], key: &[u8]) -> subtle::Choice {
    let presented: [u8; 32] = Sha256::digest(presented).into();
    let key: [u8; 32] = Sha256::digest(key).into();
    presented.ct_eq(&key)
}

/// Whether `presented` is any of `keys`: every key is compared, whatever matches.
pub fn any_key<'a>(presented: &[u8], keys: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let presented_digest: [u8; 32] = Sha256::digest(presented).into();
    let mut matched = subtle::Choice::from(0);
    for key in keys {
        let digest: [u8; 32] = Sha256::digest(key).into();
        matched |= digest.ct_eq(&presented_digest);
    }
    bool::from(matched)
}

/// The status of a client the throttle refuses.
pub fn throttled_status(retry_after_s: u64) -> Status {
    let mut metadata = MetadataMap::new();
    metadata.insert("retry-after", MetadataValue::from(retry_after_s));
    Status::with_metadata(
        Code::ResourceExhausted,
        format!("too many failed authentication attempts from this address; retry after {retry_after_s} s"),
        metadata,
    )
}

/// What the check decided about a call.
enum Verdict {
    Pass,
    Refuse(Status),
    RefuseLater(Status, std::time::Duration),
}

/// Enforces `[auth] api_keys` on the services it wraps.
#[derive(Clone)]
pub struct ApiKeyCheck<S> {
    inner: S,
    live: Arc<LiveConfig>,
    throttle: Arc<AuthThrottle>,
    clock: Arc<dyn Clock>,
}

impl<S> ApiKeyCheck<S> {
    pub fn new(inner: S, live: Arc<LiveConfig>, throttle: Arc<AuthThrottle>, clock: Arc<dyn Clock>) -> ApiKeyCheck<S> {
        ApiKeyCheck { inner, live, throttle, clock }
    }

    fn verdict<B>(&self, request: &http::Request<B>) -> Verdict {
        let live = self.live.get();
        let Some(keys) = &live.config.auth.api_keys else {
            return Verdict::Pass;
        };
        let Some(presented) = request
            .headers()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
        else {
            return Verdict::Refuse(Status::unauthenticated(MISSING));
        };
        let client = peer(request).map(Client::of_peer);
        let now_ms = self.clock.now_ms();
        if let Some(client) = client
            && let Some(retry_after_s) = self.throttle.blocked(client, Listener::Grpc, now_ms)
        {
            return Verdict::Refuse(throttled_status(retry_after_s));
        }
        if any_key(presented.as_bytes(), keys.iter().map(|key| key.key.as_bytes())) {
            return Verdict::Pass;
        }
        let Some(client) = client else {
            return Verdict::Refuse(Status::unauthenticated(INVALID));
        };
        match self.throttle.failed(client, Listener::Grpc, now_ms) {
            Answer::Now => Verdict::Refuse(Status::unauthenticated(INVALID)),
            Answer::Delayed(delay) => Verdict::RefuseLater(Status::unauthenticated(INVALID), delay),
            Answer::Blocked { retry_after_s } => Verdict::Refuse(throttled_status(retry_after_s)),
        }
    }
}

/// The peer address tonic recorded for the connection, plain or TLS.
fn peer<B>(request: &http::Request<B>) -> Option<std::net::SocketAddr> {
    let extensions = request.extensions();
    extensions
        .get::<TcpConnectInfo>()
        .and_then(TcpConnectInfo::remote_addr)
        .or_else(|| extensions.get::<TlsConnectInfo<TcpConnectInfo>>().and_then(|info| info.get_ref().remote_addr()))
}

type Refusal<R, E> = Either<std::future::Ready<Result<R, E>>, Pin<Box<dyn Future<Output = Result<R, E>> + Send>>>;

impl<S, B> tonic::codegen::Service<http::Request<B>> for ApiKeyCheck<S>
where
    S: tonic::codegen::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    /// A call that passes is the service's own future, unboxed; only a delayed refusal is boxed.
    type Future = Either<Refusal<S::Response, S::Error>, S::Future>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        match self.verdict(&request) {
            Verdict::Pass => Either::Right(self.inner.call(request)),
            Verdict::Refuse(status) => Either::Left(Either::Left(std::future::ready(Ok(status.into_http())))),
            Verdict::RefuseLater(status, delay) => Either::Left(Either::Right(Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(status.into_http())
            }))),
        }
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for ApiKeyCheck<S> {
    const NAME: &'static str = S::NAME;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_only_when_equal_whatever_their_lengths() {
        assert!(bool::from(same_key(b"k1", b"k1")));
        assert!(!bool::from(same_key(b"k1", b"k12")));
        assert!(!bool::from(same_key(b"", b"k1")));
        assert!(any_key(b"b", [b"a".as_slice(), b"b".as_slice()]));
        assert!(!any_key(b"c", [b"a".as_slice(), b"b".as_slice()]));
        assert!(!any_key(b"", std::iter::empty()));
    }

    #[test]
    fn a_throttled_status_says_when_to_retry() {
        let status = throttled_status(42);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(status.metadata().get("retry-after").and_then(|value| value.to_str().ok()), Some("42"));
        assert!(status.message().contains("retry after 42 s"));
    }
}
