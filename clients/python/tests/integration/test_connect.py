"""Connecting: plaintext, TLS (custom CA, name override, credentials), API keys, timeouts."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from ipaddress import IPv4Address
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sepp import (
    ConnectError,
    EnqueueRequest,
    InvalidApiKeyError,
    SeppClient,
    UnauthenticatedError,
)
from tests.sepp_server import SeppServer


def make_tls_files(directory: Path) -> bytes:
    """A CA and a server certificate for 127.0.0.1 / localhost / queue.example.com; the CA PEM."""
    now = datetime.now(timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sepp test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "queue.example.com")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("queue.example.com"),
                    x509.DNSName("localhost"),
                    x509.IPAddress(IPv4Address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    (directory / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    (directory / "ca.pem").write_bytes(ca_pem)
    return ca_pem


def tls_server(
    start_server: Callable[..., SeppServer], directory: Path, **auth: object
) -> SeppServer:
    config: dict[str, object] = {
        "server": {
            "tls_cert_path": str(directory / "cert.pem"),
            "tls_key_path": str(directory / "key.pem"),
        }
    }
    if auth:
        config["auth"] = auth
    return start_server(config)


async def test_https_implies_tls_with_a_custom_ca(start_server, tmp_path: Path, queue: str) -> None:
    ca = make_tls_files(tmp_path)
    srv = tls_server(start_server, tmp_path)
    async with await SeppClient.connect(f"https://{srv.addr}", tls_ca_cert=ca) as client:
        await client.enqueue(EnqueueRequest(queue, "t"))
    async with await SeppClient.connect(f"https://localhost:{srv.port}", tls_ca_cert=ca.decode()):
        pass


async def test_tls_domain_overrides_the_verified_name(start_server, tmp_path: Path) -> None:
    ca = make_tls_files(tmp_path)
    srv = tls_server(start_server, tmp_path)
    async with await SeppClient.connect(srv.addr, tls_ca_cert=ca, tls_domain="queue.example.com"):
        pass
    with pytest.raises(ConnectError):
        await SeppClient.connect(
            srv.addr,
            tls_ca_cert=ca,
            tls_domain="elsewhere.example.com",
            connect_timeout=timedelta(seconds=1),
        )


async def test_credentials_object_and_system_roots(start_server, tmp_path: Path) -> None:
    ca = make_tls_files(tmp_path)
    srv = tls_server(start_server, tmp_path)
    credentials = grpc.ssl_channel_credentials(root_certificates=ca)
    async with await SeppClient.connect(srv.addr, credentials=credentials) as client:
        assert (await client.get_server_info()).version
    with pytest.raises(ConnectError):  # the system roots do not trust the test CA
        await SeppClient.connect(srv.addr, tls=True, connect_timeout=timedelta(seconds=1))
    with pytest.raises(ConnectError):  # plaintext to a TLS port
        await SeppClient.connect(srv.addr, connect_timeout=timedelta(seconds=1))


async def test_api_keys_are_checked_by_the_server(start_server, queue: str) -> None:
    srv = start_server({"auth": {"api_keys": [{"name": "worker", "key": "right-key"}]}})
    async with await SeppClient.connect(srv.addr, api_key="right-key") as client:
        await client.enqueue(EnqueueRequest(queue, "t"))
    async with await SeppClient.connect(srv.addr, api_key="wrong-key") as client:
        with pytest.raises(UnauthenticatedError):
            await client.enqueue(EnqueueRequest(queue, "t"))
    async with await SeppClient.connect(srv.addr) as client:
        with pytest.raises(UnauthenticatedError):
            await client.get_server_info()


async def test_an_api_key_over_tls_works_and_plaintext_warns(
    start_server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ca = make_tls_files(tmp_path)
    srv = tls_server(start_server, tmp_path, api_keys=[{"name": "w", "key": "secret"}])
    with caplog.at_level(logging.WARNING, logger="sepp"):
        async with await SeppClient.connect(
            f"https://{srv.addr}", api_key="secret", tls_ca_cert=ca
        ) as client:
            assert (await client.get_server_info()).version
        assert "plaintext" not in caplog.text
        with pytest.raises(ConnectError):
            await SeppClient.connect(
                srv.addr, api_key="secret", connect_timeout=timedelta(seconds=1)
            )
        assert "without TLS" in caplog.text


@pytest.mark.parametrize("key", ["", "two\nlines", "caf\u00e9", "tab\there"])
async def test_keys_that_no_header_can_carry_fail_at_connect(key: str) -> None:
    with pytest.raises(InvalidApiKeyError):
        await SeppClient.connect("127.0.0.1:1", api_key=key)


async def test_connect_gives_up_after_the_connect_timeout() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens on it once the socket closes
    addr = f"127.0.0.1:{port}"
    with pytest.raises(ConnectError) as caught:
        await SeppClient.connect(addr, connect_timeout=timedelta(milliseconds=300))
    assert caught.value.addr == addr and "0.3" in caught.value.reason


@pytest.mark.parametrize(
    ("addr", "options"),
    [("", {}), ("http://127.0.0.1:1", {"tls": True}), ("https://host:1/path", {})],
)
async def test_bad_addresses_are_refused_before_connecting(
    addr: str, options: dict[str, object]
) -> None:
    with pytest.raises(ValueError):
        await SeppClient.connect(addr, **options)  # type: ignore[arg-type]
