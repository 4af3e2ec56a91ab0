"""One webhook POST to the address that was checked (``memory.services.webhook_targets``).

The URL names the pinned IP address, with the original host as ``Host`` header and, for https, as
TLS server name (httpx's ``sni_hostname`` extension: SNI and the certificate check use the name), so
a DNS answer changing after the check cannot steer the POST inside. Redirects are not followed and
only the answer's status is read. The TLS context (~20 ms to build) is shared by every attempt.
"""

from __future__ import annotations

import functools
import ssl

import httpx

from memory.services.webhook_targets import Target, literal_address


def pinned(target: Target) -> tuple[httpx.URL, dict[str, str], dict[str, str]]:
    """The URL to connect to, the headers to add and the request extensions for ``target``."""
    if target.address is None:  # private targets allowed: httpx resolves the name itself
        return target.url, {}, {}
    literal = f"[{target.address}]" if ":" in target.address else target.address
    url = target.url.copy_with(host=literal)
    headers = {"Host": target.url.netloc.decode("ascii")}
    named = literal_address(target.host) is None
    extensions = {"sni_hostname": target.host.rstrip(".")} if target.url.scheme == "https" and named else {}
    return url, headers, extensions


@functools.cache
def tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def post(target: Target, *, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
    """POST ``body`` to ``target``; the answer's status code (httpx errors propagate)."""
    url, extra_headers, extensions = pinned(target)
    with (
        httpx.Client(timeout=timeout_s, follow_redirects=False, verify=tls_context()) as client,
        client.stream(
            "POST", url, content=body, headers={**headers, **extra_headers}, extensions=extensions
        ) as response,
    ):
        return response.status_code
