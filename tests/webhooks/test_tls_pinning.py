"""A pinned https delivery: the TCP connection goes to the checked IP while TLS (SNI and the certificate
check) and the Host header use the name. A real TLS server on 127.0.0.1 with a certificate for
``hooks.example.com`` only, made here with ``cryptography``."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from memory.services.webhook_targets import target_resolve
from workers import webhook_http

NAME = "hooks.example.com"


def _certificate(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch):
    cert_file, key_file = _certificate(tmp_path)
    seen: dict = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            seen["host"] = self.headers["Host"]
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)

    def remember_sni(sock, server_name, _ctx):
        seen["sni"] = server_name

    server_ctx.sni_callback = remember_sni
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = server_ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(cafile=str(cert_file))
    monkeypatch.setattr(webhook_http, "tls_context", lambda: client_ctx)
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, port, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
    )
    monkeypatch.setattr("memory.services.webhook_targets.address_is_public", lambda a: a == "127.0.0.1")
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


def test_https_goes_to_the_checked_ip_with_the_name_for_sni_the_certificate_and_host(tls_receiver, settings):
    port, seen = tls_receiver
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": False}
    target = target_resolve(f"https://{NAME}:{port}/hook", resolve=True)
    assert target.address == "127.0.0.1"

    status = webhook_http.post(target, body=b"{}", headers={"Content-Type": "application/json"}, timeout_s=5)

    assert status == 204
    assert seen == {"host": f"{NAME}:{port}", "sni": NAME}


def test_the_certificate_is_checked_against_the_name(tls_receiver, settings):
    """The same server, asked for another name: the certificate does not match, no POST."""
    import httpx

    port, seen = tls_receiver
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": False}
    target = target_resolve(f"https://other.example.com:{port}/hook", resolve=True)

    with pytest.raises(httpx.ConnectError):
        webhook_http.post(target, body=b"{}", headers={}, timeout_s=5)
    assert "host" not in seen
