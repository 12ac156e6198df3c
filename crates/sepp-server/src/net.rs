//! The accept path of every listener (queue gRPC, admin HTTP, Prometheus, cluster Raft):
//! binding with `SO_REUSEADDR`, a maximum number of open connections per listener, a shared
//! descriptor budget that keeps a reserve for storage, backoff when the process is out of
//! descriptors, and the deadlines a connection must meet before it is served.
//!
//! - [`bind`] binds with `SO_REUSEADDR` (a restart right after a kill finds the port free even
//!   with sockets of the old process in `TIME_WAIT`), retrying `EADDRINUSE` for a short while.
//! - [`Acceptor::accept`] hands out a [`Conn`] only while its listener is under its maximum and
//!   the shared budget ([`budget`]: the descriptor limit minus a reserve for storage) has room;
//!   past either, the connection is closed at once and counted in [`Counts`]. `EMFILE`/`ENFILE`
//!   make it sleep with exponential [`Backoff`] instead of retrying at once.
//! - [`grpc_incoming`] does the TLS handshake and reads the HTTP/2 preface of each connection
//!   (both under `server.handshake_timeout_ms`, off the accept loop), then gives the connection
//!   to tonic.
//! - [`raise_descriptor_limit`] raises the soft `RLIMIT_NOFILE` to the hard one (at startup).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// The listeners, as the `listener` attribute of the connection metrics names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listener {
    Queue,
    Admin,
    Prometheus,
    Cluster,
}

impl Listener {
    pub const ALL: [Listener; 4] = [Listener::Queue, Listener::Admin, Listener::Prometheus, Listener::Cluster];

    pub fn name(self) -> &'static str {
        match self {
            Listener::Queue => "queue",
            Listener::Admin => "admin",
            Listener::Prometheus => "prometheus",
            Listener::Cluster => "cluster",
        }
    }
}

/// Why a connection was closed before it was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The listener had its maximum number of connections open.
    Limit,
    /// The shared descriptor budget was spent (the reserve for storage is never lent).
    Descriptors,
    /// The TLS handshake or the HTTP/2 preface did not complete within the handshake deadline.
    Handshake,
}

impl Refusal {
    pub const ALL: [Refusal; 3] = [Refusal::Limit, Refusal::Descriptors, Refusal::Handshake];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::Limit => "limit",
            Refusal::Descriptors => "descriptors",
            Refusal::Handshake => "handshake",
        }
    }
}

/// One listener's connection counts, for `sepp.connections.open` and `sepp.connections.refused`.
#[derive(Default)]
pub struct Counts {
    open: AtomicU64,
    refused: [AtomicU64; 3],
    /// When a refusal was last logged, in ms since [`epoch`]; refusals log at most every 10 s.
    logged_ms: AtomicU64,
}

impl Counts {
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    pub fn refused(&self, refusal: Refusal) -> u64 {
        self.refused[refusal as usize].load(Ordering::Relaxed)
    }
}

static COUNTS: [Counts; 4] = [const { counts() }; 4];

const fn counts() -> Counts {
    Counts { open: AtomicU64::new(0), refused: [const { AtomicU64::new(0) }; 3], logged_ms: AtomicU64::new(0) }
}

/// The counts of `listener` (process-wide).
pub fn counts_of(listener: Listener) -> &'static Counts {
    &COUNTS[listener as usize]
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

/// How often a listener logs that it refuses connections.
const REFUSAL_LOG_EVERY_MS: u64 = 10_000;

fn refuse(listener: Listener, refusal: Refusal) {
    let counts = counts_of(listener);
    counts.refused[refusal as usize].fetch_add(1, Ordering::Relaxed);
    let (now, last) = (now_ms(), counts.logged_ms.load(Ordering::Relaxed));
    if (last == 0 || now.saturating_sub(last) >= REFUSAL_LOG_EVERY_MS)
        && counts.logged_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    {
        tracing::warn!(
            listener = listener.name(),
            reason = refusal.name(),
            open = counts.open(),
            refused_total = Refusal::ALL.iter().map(|r| counts.refused(*r)).sum::<u64>(),
            "closing new connections (logged at most every 10 s; see sepp.connections.refused)"
        );
    }
}

/// The descriptors kept for storage (log segments, snapshots, the data directory) and the
/// runtime, which connections never take: a quarter of the limit, at least 64 and at most 1024,
/// and never more than half of it.
pub fn reserve_for(limit: u64) -> u64 {
    (limit / 4).clamp(64, 1024).min(limit / 2)
}

/// How many connections all listeners together may hold for `limit` descriptors.
pub fn budget_for(limit: u64) -> u64 {
    limit.saturating_sub(reserve_for(limit)).max(1)
}

/// The soft descriptor limit of the process (`u64::MAX` when unlimited or unknown).
#[allow(clippy::unnecessary_cast, reason = "rlim_t is u64 on Linux, not on every unix")]
pub fn descriptor_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            return if limit.rlim_cur == libc::RLIM_INFINITY { u64::MAX } else { limit.rlim_cur as u64 };
        }
    }
    u64::MAX
}

/// Raises the soft descriptor limit to the hard one and returns the soft limit in force.
pub fn raise_descriptor_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit and setrlimit read and write the struct they are given.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                    // macOS refuses more than OPEN_MAX as the soft limit of an unlimited hard one.
                    let capped = libc::rlimit { rlim_cur: 10_240.max(limit.rlim_cur), rlim_max: limit.rlim_max };
                    libc::setrlimit(libc::RLIMIT_NOFILE, &capped);
                }
            }
        }
    }
    descriptor_limit()
}

/// The budget all listeners share, sized from the descriptor limit the first time it is used.
pub fn budget() -> &'static Arc<Semaphore> {
    static BUDGET: OnceLock<Arc<Semaphore>> = OnceLock::new();
    BUDGET.get_or_init(|| {
        let limit = descriptor_limit();
        let permits = budget_for(limit).min(Semaphore::MAX_PERMITS as u64) as usize;
        tracing::info!(
            descriptor_limit = limit,
            reserved = reserve_for(limit),
            connection_budget = permits,
            "descriptor budget for connections"
        );
        Arc::new(Semaphore::new(permits))
    })
}

/// How long [`bind`] keeps retrying an address that is in use.
const BIND_RETRY_FOR: Duration = Duration::from_secs(2);

/// Binds `addr` with `SO_REUSEADDR`, retrying `EADDRINUSE` for up to 2 s (a process that was
/// just killed may still hold the port for a moment).
pub async fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let started = Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(250));
    loop {
        match bind_once(addr) {
            Err(error) if error.kind() == io::ErrorKind::AddrInUse && started.elapsed() < BIND_RETRY_FOR => {
                tokio::time::sleep(backoff.next_delay()).await;
            }
            other => return other,
        }
    }
}

fn bind_once(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Exponential backoff: `first`, doubling up to `max`, back to `first` after [`Backoff::reset`].
#[derive(Debug)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { first, max, next: first }
    }

    /// The delay to wait now; the one after it is twice as long, up to the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    pub fn reset(&mut self) {
        self.next = self.first;
    }

    /// Whether the last [`Backoff::next_delay`] was the first of a run.
    pub fn is_fresh(&self) -> bool {
        self.next == self.first
    }
}

/// Whether an accept error means the process (or the system) is out of descriptors.
fn out_of_descriptors(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// A listener's accept loop state: its own connection limit and the backoff after `EMFILE`.
pub struct Acceptor {
    listener: TcpListener,
    kind: Listener,
    own: Arc<Semaphore>,
    backoff: Backoff,
}

impl Acceptor {
    /// Accepts on `listener` with at most `max_connections` open at once.
    pub fn new(listener: TcpListener, kind: Listener, max_connections: u64) -> Acceptor {
        let max = max_connections.clamp(1, Semaphore::MAX_PERMITS as u64) as usize;
        Acceptor {
            listener,
            kind,
            own: Arc::new(Semaphore::new(max)),
            backoff: Backoff::new(Duration::from_millis(10), Duration::from_secs(1)),
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next connection within the limits. Connections past them are closed at once and
    /// counted; out of descriptors, it sleeps (10 ms doubling to 1 s) before it accepts again.
    pub async fn accept(&mut self) -> Conn {
        loop {
            match self.listener.accept().await {
                Ok((stream, _)) => {
                    if !self.backoff.is_fresh() {
                        tracing::info!(listener = self.kind.name(), "accepting connections again");
                    }
                    self.backoff.reset();
                    let Ok(own) = self.own.clone().try_acquire_owned() else {
                        refuse(self.kind, Refusal::Limit);
                        continue;
                    };
                    let Ok(shared) = budget().clone().try_acquire_owned() else {
                        refuse(self.kind, Refusal::Descriptors);
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    return Conn::new(stream, self.kind, [own, shared]);
                }
                Err(error) => {
                    if let Some(pause) = self.pause_after(&error) {
                        tokio::time::sleep(pause).await;
                    }
                }
            }
        }
    }

    /// How long the accept loop pauses after `error`: out of descriptors, 10 ms doubling to 1 s
    /// for as long as it lasts (logged once per run), so the loop never spins on `EMFILE`; any
    /// other error (a peer that reset before the accept and the like) has nothing to wait for.
    fn pause_after(&mut self, error: &io::Error) -> Option<Duration> {
        if !out_of_descriptors(error) {
            return None;
        }
        if self.backoff.is_fresh() {
            tracing::warn!(
                listener = self.kind.name(),
                %error,
                "out of file descriptors: not accepting until connections close"
            );
        }
        Some(self.backoff.next_delay())
    }
}

/// When a connection last read or wrote, for idle timeouts.
#[derive(Debug)]
pub struct Activity(AtomicU64);

impl Activity {
    fn touch(&self) {
        self.0.store(now_ms(), Ordering::Relaxed);
    }

    /// How long the connection has been quiet.
    pub fn quiet_for(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.0.load(Ordering::Relaxed)))
    }

    /// Resolves once the connection has been quiet for `timeout`.
    pub async fn idle(&self, timeout: Duration) {
        loop {
            let quiet = self.quiet_for();
            if quiet >= timeout {
                return;
            }
            tokio::time::sleep(timeout - quiet).await;
        }
    }
}

/// An accepted connection: counted as open, holding its place in the listener's limit and the
/// shared budget until it is dropped. Bytes read ahead (the HTTP/2 preface) are read again first.
pub struct Conn {
    stream: TcpStream,
    kind: Listener,
    _permits: [OwnedSemaphorePermit; 2],
    replay: Vec<u8>,
    replayed: usize,
    activity: Arc<Activity>,
}

impl Conn {
    fn new(stream: TcpStream, kind: Listener, permits: [OwnedSemaphorePermit; 2]) -> Conn {
        counts_of(kind).open.fetch_add(1, Ordering::Relaxed);
        Conn {
            stream,
            kind,
            _permits: permits,
            replay: Vec::new(),
            replayed: 0,
            activity: Arc::new(Activity(AtomicU64::new(now_ms()))),
        }
    }

    pub fn activity(&self) -> Arc<Activity> {
        self.activity.clone()
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.stream.peer_addr()
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.stream.local_addr()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        counts_of(self.kind).open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Copies what is left of `replay` (bytes read ahead) into `buf`; whether there was any.
fn replay_into(replay: &[u8], replayed: &mut usize, buf: &mut ReadBuf<'_>) -> bool {
    let rest = &replay[*replayed..];
    if rest.is_empty() {
        return false;
    }
    let n = rest.len().min(buf.remaining());
    buf.put_slice(&rest[..n]);
    *replayed += n;
    true
}

impl AsyncRead for Conn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if replay_into(&this.replay, &mut this.replayed, buf) {
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Conn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

/// What HTTP/2 clients send first.
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A queue-service connection past its handshake: plain or TLS, with the preface to replay.
pub enum GrpcConn {
    Plain(Conn),
    Tls(Box<Replay<tokio_rustls::server::TlsStream<Conn>>>),
}

/// A stream whose first bytes were read ahead and are read again first.
pub struct Replay<S> {
    inner: S,
    replay: Vec<u8>,
    replayed: usize,
}

impl<S: AsyncRead + Unpin> AsyncRead for Replay<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if replay_into(&this.replay, &mut this.replayed, buf) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

macro_rules! delegate_write {
    ($self:ident, $method:ident ( $($arg:expr),* )) => {
        match &mut *$self {
            GrpcConn::Plain(conn) => Pin::new(conn).$method($($arg),*),
            GrpcConn::Tls(tls) => Pin::new(&mut tls.inner).$method($($arg),*),
        }
    };
}

impl AsyncRead for GrpcConn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut *self {
            GrpcConn::Plain(conn) => Pin::new(conn).poll_read(cx, buf),
            GrpcConn::Tls(tls) => Pin::new(&mut **tls).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for GrpcConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        delegate_write!(self, poll_write(cx, data))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        delegate_write!(self, poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            GrpcConn::Plain(conn) => conn.is_write_vectored(),
            GrpcConn::Tls(tls) => tls.inner.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate_write!(self, poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate_write!(self, poll_shutdown(cx))
    }
}

impl Connected for GrpcConn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        match self {
            GrpcConn::Plain(conn) => conn.connect_info(),
            GrpcConn::Tls(tls) => tls.inner.get_ref().0.connect_info(),
        }
    }
}

/// Reads the HTTP/2 preface ahead. A connection that sends something else is still served
/// (the HTTP/2 server answers it with its own error); one that sends nothing is not.
async fn read_preface<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<Vec<u8>> {
    let mut read = vec![0; PREFACE.len()];
    let mut filled = 0;
    while filled < read.len() {
        let n = stream.read(&mut read[filled..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
        if read[..filled] != PREFACE[..filled] {
            break;
        }
    }
    read.truncate(filled);
    Ok(read)
}

async fn handshake(mut conn: Conn, tls: Option<TlsAcceptor>) -> io::Result<GrpcConn> {
    match tls {
        None => {
            conn.replay = read_preface(&mut conn).await?;
            Ok(GrpcConn::Plain(conn))
        }
        Some(acceptor) => {
            let mut stream = acceptor.accept(conn).await?;
            let replay = read_preface(&mut stream).await?;
            Ok(GrpcConn::Tls(Box::new(Replay { inner: stream, replay, replayed: 0 })))
        }
    }
}

/// The queue listener's connections for tonic's `serve_with_incoming`: accepted within the
/// limits, each through its TLS handshake (when `tls`) and its HTTP/2 preface within
/// `handshake_timeout`, on a task of its own so that a slow client holds up no other. Stops
/// accepting when tonic drops the stream.
pub fn grpc_incoming(
    mut acceptor: Acceptor,
    tls: Option<TlsAcceptor>,
    handshake_timeout: Duration,
) -> impl futures_util::Stream<Item = Result<GrpcConn, io::Error>> + Send + 'static {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let conn = tokio::select! {
                conn = acceptor.accept() => conn,
                () = sender.closed() => break,
            };
            let (sender, tls, kind) = (sender.clone(), tls.clone(), acceptor.kind);
            tokio::spawn(async move {
                match tokio::time::timeout(handshake_timeout, handshake(conn, tls)).await {
                    Ok(Ok(conn)) => {
                        let _ = sender.send(Ok(conn));
                    }
                    Ok(Err(_)) => {}
                    Err(_) => refuse(kind, Refusal::Handshake),
                }
            });
        }
    });
    futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

/// Counts a connection closed for missing its handshake deadline (the admin listener's TLS
/// handshake).
pub fn handshake_timed_out(listener: Listener) {
    refuse(listener, Refusal::Handshake);
}

/// The rustls server configuration of `cert_path`/`key_path` with ALPN `alpn`.
pub fn tls_acceptor(
    cert_path: &std::path::Path,
    key_path: &std::path::Path,
    alpn: &[&[u8]],
) -> Result<TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls;
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|error| format!("could not read TLS file {}: {error}", path.display()))
    };
    let certs = CertificateDer::pem_slice_iter(&read(cert_path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("invalid TLS certificate or key: {error}"))?;
    if certs.is_empty() {
        return Err(format!("invalid TLS certificate or key: {} holds no certificate", cert_path.display()));
    }
    let key = PrivateKeyDer::from_pem_slice(&read(key_path)?)
        .map_err(|error| format!("invalid TLS certificate or key: {error}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("invalid TLS certificate or key: {error}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|error| format!("invalid TLS certificate or key: {error}"))?;
    config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_maximum_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
        let delays: Vec<u64> = (0..9).map(|_| backoff.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert!(!backoff.is_fresh());
        backoff.reset();
        assert!(backoff.is_fresh());
        assert_eq!(backoff.next_delay(), Duration::from_millis(10));
    }

    #[test]
    fn the_reserve_is_a_quarter_of_the_limit_within_bounds() {
        assert_eq!(reserve_for(128), 64);
        assert_eq!(budget_for(128), 64);
        assert_eq!(reserve_for(1024), 256);
        assert_eq!(reserve_for(1_048_576), 1024);
        assert_eq!(budget_for(1_048_576), 1_047_552);
        assert_eq!(budget_for(10), 5);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn accept_backs_off_when_out_of_descriptors() {
        // EMFILE is what accept answers at the limit: the loop must pause, growing up to 1 s,
        // not spin; other errors are retried at once; a connection accepted again starts over.
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut acceptor = Acceptor::new(listener, Listener::Cluster, 8);
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let pauses: Vec<_> = (0..9).map(|_| acceptor.pause_after(&emfile)).collect();
        let ms = |n: u64| Some(Duration::from_millis(n));
        assert_eq!(pauses, [ms(10), ms(20), ms(40), ms(80), ms(160), ms(320), ms(640), ms(1000), ms(1000)]);
        assert_eq!(acceptor.pause_after(&io::Error::from_raw_os_error(libc::ENFILE)), ms(1000));
        assert_eq!(acceptor.pause_after(&io::Error::from_raw_os_error(libc::ECONNABORTED)), None);
        let _client = TcpStream::connect(addr).await.unwrap();
        let _conn = acceptor.accept().await;
        assert_eq!(acceptor.pause_after(&emfile), ms(10));
    }

    #[tokio::test]
    async fn connections_past_the_limit_are_closed_and_counted() {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut acceptor = Acceptor::new(listener, Listener::Cluster, 1);
        let before = counts_of(Listener::Cluster).refused(Refusal::Limit);
        let _first = TcpStream::connect(addr).await.unwrap();
        let held = acceptor.accept().await;
        let mut second = TcpStream::connect(addr).await.unwrap();
        let third = TcpStream::connect(addr);
        let accepting = tokio::spawn(async move {
            let conn = acceptor.accept().await;
            drop(conn);
        });
        let mut byte = [0u8; 1];
        assert_eq!(second.read(&mut byte).await.unwrap_or(0), 0, "the second connection is closed at once");
        assert!(counts_of(Listener::Cluster).refused(Refusal::Limit) > before);
        drop(held);
        let _third = third.await.unwrap();
        accepting.await.unwrap();
    }
}
