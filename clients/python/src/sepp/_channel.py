"""Building the gRPC channel: the address, TLS, the API key header and the channel settings.

Settings every channel gets, and why:

* keepalive pings every 30 s with a 10 s timeout, also while no call is open and without a cap
  on pings between data frames: a reserve long poll holds a connection with nothing on it for
  up to its wait timeout, and proxies or load balancers drop connections that look idle;
* `user-agent` `sepp-py/<version>`, which the server logs;
* the receive limit, only when asked for (`max_receive_message_bytes`); gRPC's default is 4 MiB.

The settings are kept in a `Dialer`, so a client following a cluster's leader opens the leader's
channel exactly like the one to the address it was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

from . import _log
from ._version import VERSION
from .errors import InvalidApiKeyError

KEEPALIVE_TIME_MS = 30_000
KEEPALIVE_TIMEOUT_MS = 10_000
USER_AGENT = f"sepp-py/{VERSION}"


def parse_address(addr: str) -> tuple[str, bool | None]:
    """The gRPC target for `addr`, and the TLS choice its scheme implies (None: no scheme).

    Accepts `host:port`, `http://host:port` (plaintext) and `https://host:port` (TLS). Targets
    gRPC itself understands (`dns:///...`, `unix:/path`, `ipv4:...`) pass through unchanged.
    """
    if not isinstance(addr, str):
        raise TypeError(f"the server address must be a string, not {type(addr).__name__}")
    address = addr.strip()
    if not address:
        raise ValueError("the server address must not be empty")
    scheme_tls: bool | None = None
    lowered = address.lower()
    if lowered.startswith("https://"):
        address, scheme_tls = address[len("https://") :], True
    elif lowered.startswith("http://"):
        address, scheme_tls = address[len("http://") :], False
    else:
        return address, None
    address = address.rstrip("/")
    if not address or "/" in address:
        raise ValueError(f"expected http(s)://host:port with no path, got {addr!r}")
    return address, scheme_tls


# Says the client follows `sepp-leader` itself: a cluster follower refuses its calls naming the
# leader instead of forwarding them.
FOLLOW_LEADER_METADATA = ("sepp-follow-leader", "1")


def auth_metadata(api_key: str) -> tuple[tuple[str, str], ...]:
    """The `authorization: Bearer <key>` header, rendered once; refuses keys no header can carry."""
    if not isinstance(api_key, str) or not api_key:
        raise InvalidApiKeyError("the API key must be a non-empty string")
    if not api_key.isascii() or not api_key.isprintable() or "\r" in api_key or "\n" in api_key:
        raise InvalidApiKeyError(
            "the API key must be printable ASCII with no line breaks to fit in a header"
        )
    return (("authorization", f"Bearer {api_key}"),)


def channel_options(
    max_receive_message_bytes: int | None, tls_domain: str | None
) -> list[tuple[str, Any]]:
    options: list[tuple[str, Any]] = [
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.primary_user_agent", USER_AGENT),
    ]
    if max_receive_message_bytes is not None:
        if type(max_receive_message_bytes) is bool or max_receive_message_bytes < 1:
            raise ValueError("max_receive_message_bytes must be a positive int")
        options.append(("grpc.max_receive_message_length", int(max_receive_message_bytes)))
    if tls_domain is not None:
        if not tls_domain:
            raise ValueError("tls_domain must not be empty")
        options.append(("grpc.ssl_target_name_override", tls_domain))
    return options


@dataclass(frozen=True)
class Dialer:
    """How to open a channel: to the configured address, and to any other node of a cluster
    with the same settings (TLS and credentials, options)."""

    credentials: grpc.ChannelCredentials | None  # None: plaintext
    options: tuple[tuple[str, Any], ...]

    @property
    def tls(self) -> bool:
        return self.credentials is not None

    def dial(self, target: str) -> grpc.aio.Channel:
        """A (not yet connected) channel to `target`."""
        if self.credentials is None:
            return grpc.aio.insecure_channel(target, options=list(self.options))
        return grpc.aio.secure_channel(target, self.credentials, options=list(self.options))


def channel_settings(
    addr: str,
    *,
    api_key: str | None,
    tls: bool,
    tls_ca_cert: bytes | str | None,
    tls_domain: str | None,
    credentials: grpc.ChannelCredentials | None,
    max_receive_message_bytes: int | None,
) -> tuple[Dialer, str, tuple[tuple[str, str], ...]]:
    """How to dial, the target `addr` names, and the auth metadata."""
    target, scheme_tls = parse_address(addr)
    wants_tls = tls or tls_ca_cert is not None or tls_domain is not None or credentials is not None
    if scheme_tls is False and wants_tls:
        raise ValueError(f"{addr!r} asks for plaintext (http://) but TLS options were given")
    use_tls = wants_tls or scheme_tls is True
    metadata = auth_metadata(api_key) if api_key is not None else ()
    if metadata and not use_tls:
        _log.warning(
            "an API key is configured without TLS: it will cross the network to %s in plaintext",
            target,
        )
    options = tuple(channel_options(max_receive_message_bytes, tls_domain))
    if not use_tls:
        return Dialer(None, options), target, metadata
    if credentials is None:
        root = tls_ca_cert.encode() if isinstance(tls_ca_cert, str) else tls_ca_cert
        credentials = grpc.ssl_channel_credentials(root_certificates=root)
    elif tls_ca_cert is not None:
        raise ValueError("give either credentials or tls_ca_cert, not both")
    return Dialer(credentials, options), target, metadata
