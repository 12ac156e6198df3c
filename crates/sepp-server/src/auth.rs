//! API-key authentication of QueueService calls (docs/protocol.md#authentication). The health service is not gated.
//!
//! The key set is read from the live configuration on every call, so hot reloads apply at once.
//! Keys are compared in constant time against every configured key.

use std::sync::Arc;

use subtle::ConstantTimeEq;
use tonic::{Request, Status};

use crate::live::LiveConfig;

const MISSING: &str = "missing API key; expected an `authorization: Bearer <key>` header";

/// A tonic interceptor enforcing `[auth] api_keys`.
#[derive(Clone)]
pub struct ApiKeyCheck {
    pub live: Arc<LiveConfig>,
}

impl tonic::service::Interceptor for ApiKeyCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let live = self.live.get();
        let Some(keys) = &live.config.auth.api_keys else {
            return Ok(request);
        };
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .ok_or_else(|| Status::unauthenticated(MISSING))?;
        let mut matched = subtle::Choice::from(0);
        for key in keys {
            matched |= key.key.as_bytes().ct_eq(presented.as_bytes());
        }
        if bool::from(matched) { Ok(request) } else { Err(Status::unauthenticated("invalid API key")) }
    }
}
