//! Connecting: [`SeppClientBuilder`] (address, API key, TLS, retries, timeouts, message size)
//! and the [`ApiKeyInterceptor`] that adds the pre-rendered `authorization` header.

use std::fmt;
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
#[cfg(feature = "tls")]
use tonic::transport::{Certificate, ClientTlsConfig};
use tonic::transport::{Channel, Endpoint};

use super::cluster::Route;
use super::wire::Node;
use super::{ClientError, RetryPolicy, SeppClient};

/// How long the initial connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// HTTP/2 keepalive: ping this often, even while idle, so proxies keep long polls open...
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// ...and give up on the connection when a ping is not answered within this.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// Sent as `user-agent`, so server logs can tell clients and versions apart.
pub(crate) const USER_AGENT: &str = concat!("sepp-client/", env!("CARGO_PKG_VERSION"));

/// Configures and opens a [`SeppClient`]; made by [`SeppClient::builder`].
///
/// The address may be `host:port`, `http://host:port` or `https://host:port`; `https://`
/// (or any TLS option) turns TLS on, which needs the `tls` cargo feature.
///
/// ```no_run
/// # async fn demo() -> Result<(), sepp_client::client::ClientError> {
/// use std::time::Duration;
/// use sepp_client::client::{RetryPolicy, SeppClient};
///
/// let client = SeppClient::builder("127.0.0.1:50051")
///     .api_key("my-key")
///     .retry_policy(RetryPolicy::default().with_max_attempts(3))
///     .rpc_timeout(Duration::from_secs(10))
///     .max_receive_message_bytes(16 * 1024 * 1024)
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until `connect` is awaited"]
pub struct SeppClientBuilder {
    addr: String,
    api_key: Option<String>,
    retry_policy: RetryPolicy,
    rpc_timeout: Duration,
    max_receive_message_bytes: Option<usize>,
    coalesce_enqueues: bool,
    coalesce_acks: bool,
    follow_leader: bool,
    #[cfg(feature = "tls")]
    tls: TlsOptions,
}

#[cfg(feature = "tls")]
#[derive(Default)]
struct TlsOptions {
    enabled: bool,
    ca_certificate: Option<Vec<u8>>,
    domain: Option<String>,
    config: Option<ClientTlsConfig>,
}

impl SeppClientBuilder {
    pub(crate) fn new(addr: String) -> Self {
        Self {
            addr,
            api_key: None,
            retry_policy: RetryPolicy::default(),
            rpc_timeout: SeppClient::DEFAULT_RPC_TIMEOUT,
            max_receive_message_bytes: None,
            coalesce_enqueues: true,
            coalesce_acks: true,
            follow_leader: true,
            #[cfg(feature = "tls")]
            tls: TlsOptions::default(),
        }
    }

    /// Whether concurrent `enqueue` / `enqueue_batch` calls share `EnqueueBatch` calls (on by
    /// default; see the crate's [Coalescing](crate#coalescing) section). Off, every call is
    /// its own gRPC call.
    pub fn coalesce_enqueues(mut self, coalesce: bool) -> Self {
        self.coalesce_enqueues = coalesce;
        self
    }

    /// Whether concurrent acks share `AckBatch` calls where the server has them (on by
    /// default; see the crate's [Coalescing](crate#coalescing) section). Off, every ack is its
    /// own `Ack` call.
    pub fn coalesce_acks(mut self, coalesce: bool) -> Self {
        self.coalesce_acks = coalesce;
        self
    }

    /// Sends `authorization: Bearer <key>` on every call. The header is rendered once; a key
    /// that cannot be a header value fails `connect` with [`ClientError::InvalidApiKey`].
    /// Without TLS the key travels in plain text, and `connect` logs a warning.
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// Whether the client follows a cluster's leader itself (on by default): every call carries
    /// the metadata `sepp-follow-leader`, so a follower refuses it with UNAVAILABLE naming the
    /// leader in `sepp-leader`, and the client calls the leader directly from then on. Off, a
    /// follower forwards the client's calls to the leader (one hop more), for a client that can
    /// reach only some nodes, such as one behind a load balancer.
    pub fn follow_leader(mut self, follow: bool) -> Self {
        self.follow_leader = follow;
        self
    }

    /// Retries transient failures (default: no retries). Reserve and dead-letter drains are
    /// never retried.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// The deadline of every call except reserve, whose deadline is its wait plus 10 s
    /// (default 30 s).
    pub fn rpc_timeout(mut self, timeout: Duration) -> Self {
        self.rpc_timeout = timeout;
        self
    }

    /// The largest response the client accepts (default: tonic's 4 MiB). Raise it to the
    /// server's `max_message_bytes` (16 MiB by default) when reserving batches of large jobs:
    /// a reserve response over the limit fails on the client after the server leased the jobs,
    /// which then wait for their leases to expire.
    pub fn max_receive_message_bytes(mut self, limit: usize) -> Self {
        self.max_receive_message_bytes = Some(limit);
        self
    }

    /// Turns TLS on, trusting the platform's root certificates.
    #[cfg(feature = "tls")]
    pub fn tls(mut self) -> Self {
        self.tls.enabled = true;
        self
    }

    /// Turns TLS on, trusting this PEM certificate authority (instead of the platform roots).
    #[cfg(feature = "tls")]
    pub fn tls_ca_certificate(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.tls.enabled = true;
        self.tls.ca_certificate = Some(pem.as_ref().to_vec());
        self
    }

    /// Turns TLS on and checks the server's certificate against this name instead of the
    /// address's host.
    #[cfg(feature = "tls")]
    pub fn tls_domain(mut self, domain: impl Into<String>) -> Self {
        self.tls.enabled = true;
        self.tls.domain = Some(domain.into());
        self
    }

    /// Turns TLS on with a complete tonic TLS configuration; a CA or domain set with the other
    /// methods is applied on top of it.
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: ClientTlsConfig) -> Self {
        self.tls.enabled = true;
        self.tls.config = Some(config);
        self
    }

    /// Connects (eagerly, within 5 s) and returns the client. In a cluster, `addr` may be any
    /// node: calls follow the leader it names (see [`SeppClient`]).
    pub async fn connect(self) -> Result<SeppClient, ClientError> {
        let interceptor = match &self.api_key {
            Some(key) => ApiKeyInterceptor::new(key)?,
            None => ApiKeyInterceptor::none(),
        }
        .with_follow_leader(self.follow_leader);
        let connect_error = |reason: String| ClientError::Connect { addr: self.addr.clone(), reason };
        let (host_port, tls) = target(&self.addr, self.tls_requested()).map_err(connect_error)?;
        let auth = interceptor.header.is_some();
        if auth && !tls {
            tracing::warn!(addr = %self.addr, "API key configured without TLS; it will be sent to the server in plaintext");
        }
        let dialer = Dialer {
            tls,
            #[cfg(feature = "tls")]
            tls_config: self.effective_tls_config(tls),
            interceptor,
            max_receive_message_bytes: self.max_receive_message_bytes,
        };
        #[cfg(not(feature = "tls"))]
        if tls {
            return Err(connect_error("TLS (an https:// address) needs sepp-client's `tls` cargo feature".to_owned()));
        }
        let channel = match dialer.endpoint(&host_port).map_err(connect_error)?.connect().await {
            Ok(channel) => channel,
            Err(error) => {
                let error = connect_error(root_cause(&error));
                tracing::error!(%error, "could not connect to the sepp server");
                return Err(error);
            }
        };
        tracing::info!(addr = %self.addr, tls, auth, "connected to the sepp server");
        let node = dialer.node(host_port.clone(), channel);
        let client = SeppClient::new(Route::following(host_port, dialer, node), self.retry_policy, self.rpc_timeout);
        Ok(client.with_coalesced_enqueues(self.coalesce_enqueues).with_coalesced_acks(self.coalesce_acks))
    }

    #[cfg(feature = "tls")]
    fn tls_requested(&self) -> bool {
        self.tls.enabled
    }

    #[cfg(not(feature = "tls"))]
    fn tls_requested(&self) -> bool {
        false
    }

    /// The TLS configuration every channel gets, when `tls`.
    #[cfg(feature = "tls")]
    fn effective_tls_config(&self, tls: bool) -> Option<ClientTlsConfig> {
        if !tls {
            return None;
        }
        let options = &self.tls;
        let mut config = match &options.config {
            Some(config) => config.clone(),
            None if options.ca_certificate.is_some() => ClientTlsConfig::new(),
            None => ClientTlsConfig::new().with_native_roots(),
        };
        if let Some(pem) = &options.ca_certificate {
            config = config.ca_certificate(Certificate::from_pem(pem));
        }
        if let Some(domain) = &options.domain {
            config = config.domain_name(domain.clone());
        }
        Some(config)
    }
}

/// How to open a channel to a node: the settings of the configured address (TLS and its
/// configuration, timeouts, keepalive, user agent, API key, receive limit), applied to it and
/// to every cluster leader the client follows.
pub(crate) struct Dialer {
    tls: bool,
    #[cfg(feature = "tls")]
    tls_config: Option<ClientTlsConfig>,
    interceptor: ApiKeyInterceptor,
    max_receive_message_bytes: Option<usize>,
}

impl Dialer {
    /// The endpoint of `host_port` (an address without a scheme), with every setting.
    fn endpoint(&self, host_port: &str) -> Result<Endpoint, String> {
        let uri = format!("{}://{host_port}", if self.tls { "https" } else { "http" });
        let endpoint = Endpoint::from_shared(uri)
            .map_err(|error| root_cause(&error))?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true)
            .user_agent(USER_AGENT)
            .map_err(|error| root_cause(&error))?;
        #[cfg(feature = "tls")]
        if let Some(config) = &self.tls_config {
            return endpoint.tls_config(config.clone()).map_err(|error| root_cause(&error));
        }
        Ok(endpoint)
    }

    /// A plaintext dialer without an API key, for tests.
    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self {
            tls: false,
            #[cfg(feature = "tls")]
            tls_config: None,
            interceptor: ApiKeyInterceptor::none(),
            max_receive_message_bytes: None,
        }
    }

    /// The node `host_port` on `channel`.
    fn node(&self, host_port: String, channel: Channel) -> Node {
        Node::new(Some(host_port), channel, self.interceptor.clone(), self.max_receive_message_bytes)
    }

    /// A node on a new channel to `host_port`. The channel connects on its first call (within
    /// the connect timeout), so an address that is down fails that call with UNAVAILABLE.
    pub(crate) fn dial(&self, host_port: &str) -> Result<Node, String> {
        Ok(self.node(host_port.to_owned(), self.endpoint(host_port)?.connect_lazy()))
    }
}

impl fmt::Debug for SeppClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeppClientBuilder")
            .field("addr", &self.addr)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("retry_policy", &self.retry_policy)
            .field("rpc_timeout", &self.rpc_timeout)
            .field("max_receive_message_bytes", &self.max_receive_message_bytes)
            .field("tls", &self.tls_requested())
            .finish()
    }
}

/// The `host:port` to dial and whether it uses TLS. `host:port` is accepted as well as `http://`
/// and `https://` addresses; `https://` or an explicit TLS option means TLS.
pub(crate) fn target(addr: &str, tls_requested: bool) -> Result<(String, bool), String> {
    let (rest, scheme_tls) = if let Some(rest) = strip_scheme(addr, "https://") {
        (rest, true)
    } else if let Some(rest) = strip_scheme(addr, "http://") {
        (rest, false)
    } else {
        (addr, false)
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() {
        return Err("the address is empty".to_owned());
    }
    if rest.contains("://") {
        return Err("only http:// and https:// addresses are supported".to_owned());
    }
    Ok((rest.to_owned(), scheme_tls || tls_requested))
}

fn strip_scheme<'a>(addr: &'a str, scheme: &str) -> Option<&'a str> {
    let head = addr.get(..scheme.len())?;
    head.eq_ignore_ascii_case(scheme).then(|| &addr[scheme.len()..])
}

/// The innermost error's message: "connection refused" rather than "transport error".
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// A tonic interceptor adding `authorization: Bearer <api key>` to every call (the header value
/// is rendered once, when the interceptor is made) and, unless turned off, `sepp-follow-leader`:
/// the client follows `sepp-leader` itself, so a cluster follower refuses its calls naming the
/// leader rather than forwarding them.
#[derive(Clone)]
pub struct ApiKeyInterceptor {
    header: Option<MetadataValue<Ascii>>,
    follow_leader: bool,
}

/// The metadata with which the client tells a cluster follower not to forward its calls.
const FOLLOW_LEADER_METADATA: &str = "sepp-follow-leader";

impl ApiKeyInterceptor {
    /// An interceptor for `api_key`, which must be non-empty visible ASCII.
    pub fn new(api_key: &str) -> Result<Self, ClientError> {
        if api_key.is_empty() || !api_key.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(ClientError::InvalidApiKey);
        }
        let header = MetadataValue::try_from(format!("Bearer {api_key}")).map_err(|_| ClientError::InvalidApiKey)?;
        Ok(Self { header: Some(header), follow_leader: true })
    }

    /// An interceptor without an API key.
    pub(crate) fn none() -> Self {
        Self { header: None, follow_leader: true }
    }

    /// Whether calls say the client follows `sepp-leader` itself (on by default).
    pub(crate) fn with_follow_leader(mut self, follow_leader: bool) -> Self {
        self.follow_leader = follow_leader;
        self
    }
}

impl Interceptor for ApiKeyInterceptor {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(header) = &self.header {
            request.metadata_mut().insert("authorization", header.clone());
        }
        if self.follow_leader {
            request.metadata_mut().insert(FOLLOW_LEADER_METADATA, MetadataValue::from_static("1"));
        }
        Ok(request)
    }
}

impl fmt::Debug for ApiKeyInterceptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKeyInterceptor").field("api_key", &self.header.as_ref().map(|_| "<redacted>")).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_with_and_without_a_scheme_are_accepted() {
        assert_eq!(target("127.0.0.1:50051", false), Ok(("127.0.0.1:50051".into(), false)));
        assert_eq!(target("http://127.0.0.1:50051", false), Ok(("127.0.0.1:50051".into(), false)));
        assert_eq!(target("HTTP://host:1/", false), Ok(("host:1".into(), false)));
        assert_eq!(target("localhost:50051", true), Ok(("localhost:50051".into(), true)));
    }

    #[test]
    fn https_implies_tls_and_a_tls_option_upgrades_http() {
        assert_eq!(target("https://sepp.example:443", false), Ok(("sepp.example:443".into(), true)));
        assert_eq!(target("http://sepp.example:443", true), Ok(("sepp.example:443".into(), true)));
    }

    #[test]
    fn empty_addresses_and_other_schemes_are_refused() {
        assert!(target("", false).is_err());
        assert!(target("https://", false).is_err());
        assert!(target("grpc://host:1", false).is_err());
    }

    #[test]
    fn the_api_key_header_is_rendered_once_and_bad_keys_are_refused() {
        let mut interceptor = ApiKeyInterceptor::new("s3cret-key").unwrap();
        let request = interceptor.call(tonic::Request::new(())).unwrap();
        assert_eq!(request.metadata().get("authorization").unwrap(), "Bearer s3cret-key");
        for bad in ["", "with space", "line\nbreak", "caf\u{e9}"] {
            assert!(matches!(ApiKeyInterceptor::new(bad), Err(ClientError::InvalidApiKey)), "{bad:?}");
        }
        let mut none = ApiKeyInterceptor::none();
        assert!(none.call(tonic::Request::new(())).unwrap().metadata().get("authorization").is_none());
        assert!(!format!("{interceptor:?}").contains("s3cret"));
    }

    #[test]
    fn calls_say_the_client_follows_the_leader_unless_told_not_to() {
        let follows = ApiKeyInterceptor::none().call(tonic::Request::new(())).unwrap();
        assert_eq!(follows.metadata().get(FOLLOW_LEADER_METADATA).unwrap(), "1");
        let mut forwarded = ApiKeyInterceptor::new("k").unwrap().with_follow_leader(false);
        assert!(forwarded.call(tonic::Request::new(())).unwrap().metadata().get(FOLLOW_LEADER_METADATA).is_none());
    }

    #[test]
    fn the_user_agent_names_this_crate_and_version() {
        assert_eq!(USER_AGENT, format!("sepp-client/{}", env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn the_root_cause_is_the_innermost_message() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let error = Outer(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused"));
        assert_eq!(root_cause(&error), "connection refused");
    }
}
