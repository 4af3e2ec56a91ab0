"""Where a webhook may be POSTed (the SSRF policy of docs/WEBHOOKS.md) and the checked address the
worker connects to (no DNS rebinding). Every address literal form, IPv4 embedded in IPv6 included,
is read as the address it is; messages never repeat the host or what it resolved to.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
import threading
from dataclasses import dataclass

import httpx

from memory import conf
from memory.services import ServiceError

#: At registration a lookup may take this long (it runs in the request); delivery waits up to the timeout.
REGISTRATION_LOOKUP_S = 3.0

#: A host name's labels once IDNA-encoded (underscores allowed: container names hold them).
_HOST_NAME = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)(\.(?!-)[a-z0-9_-]{1,63}(?<!-))*\.?")
#: What the C resolver may read as an IPv4 address (decimal, octal, hex; 1 to 4 parts).
_NUMERIC = re.compile(r"[0-9a-fx.]+")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_COMPAT = ipaddress.ip_network("::/96")
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".home.arpa")


class WebhookUrlRefused(ServiceError):
    code = "invalid_url"
    field = "url"

    def __init__(self, message: str):
        super().__init__(message, field="url")


NOT_PUBLIC = (
    "Webhook URLs must reach a public address (loopback, private, link-local and other internal "
    "targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS is set)."
)


@dataclass(frozen=True)
class Target:
    """A checked URL: the ASCII host httpx connects to, and the address to connect to (None when
    private targets are allowed and the host is left to httpx to resolve)."""

    url: httpx.URL
    host: str
    address: str | None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64) or (ip in _COMPAT and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_is_public(address: str) -> bool:
    """Whether ``address`` (IPv4 or IPv6, a zone id allowed) is a public unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if (embedded := _embedded_ipv4(ip)) is not None:
            return address_is_public(str(embedded))
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def literal_address(host: str) -> str | None:
    """The address ``host`` denotes without DNS (any form the C resolver reads), or None for a name."""
    bare = host.strip("[]").split("%", 1)[0]
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(bare))
    if _NUMERIC.fullmatch(host.lower()) and not host.endswith("."):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _parse(url: str) -> httpx.URL:
    if not isinstance(url, str) or not url or len(url) > 2000:
        raise WebhookUrlRefused("Not a valid URL.")
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError, UnicodeError, TypeError) as exc:
        raise WebhookUrlRefused("Not a valid URL.") from exc
    if port is not None and not 0 < port < 65536:
        raise WebhookUrlRefused("Not a valid URL: the port is out of range.")
    if parsed.scheme not in ("http", "https"):
        raise WebhookUrlRefused("Webhook URLs must be http:// or https://.")
    if not parsed.raw_host:
        raise WebhookUrlRefused("The webhook URL has no host.")
    if parsed.userinfo:
        raise WebhookUrlRefused("Webhook URLs may not hold credentials; the signature authenticates us.")
    return parsed


def _lookup(host: str, port: int, timeout_s: float) -> list[str] | None:
    """The host's addresses, or None when it does not resolve (within ``timeout_s``). The lookup runs
    in a thread of its own (``getaddrinfo`` takes no timeout), started per call so that a process
    forked after import (Celery's prefork pool, gunicorn) never waits on a parent's thread."""
    found: list[str] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return
        found.extend(str(info[4][0]) for info in infos)

    thread = threading.Thread(target=lookup, name="webhook-dns", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return list(found) if not thread.is_alive() and found else None


def target_resolve(url: str, *, resolve: bool = True) -> Target:
    """Check ``url`` and pick the address to connect to (``resolve=False``: a name may not resolve yet)."""
    parsed = _parse(url)
    host = parsed.raw_host.decode("ascii").lower()
    literal = literal_address(host)
    if literal is None and not _HOST_NAME.fullmatch(host):
        raise WebhookUrlRefused("The webhook URL's host is not a valid host name.")
    if conf.get().webhooks.allow_private_targets:
        return Target(parsed, host, None)
    if literal is not None:
        if not address_is_public(literal):
            raise WebhookUrlRefused(NOT_PUBLIC)
        return Target(parsed, host, literal)
    name = host.rstrip(".")
    if name == "localhost" or name.endswith(_LOCAL_SUFFIXES) or "." not in name:
        raise WebhookUrlRefused(NOT_PUBLIC)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    wait = conf.get().webhooks.timeout_s
    addresses = _lookup(host, port, wait if resolve else min(wait, REGISTRATION_LOOKUP_S))
    if not addresses:
        if resolve:
            raise WebhookUrlRefused("The webhook host does not resolve.")
        return Target(parsed, host, None)
    if not all(address_is_public(a) for a in addresses):
        raise WebhookUrlRefused(NOT_PUBLIC)
    return Target(parsed, host, addresses[0])


def url_check(url: str, *, resolve: bool = False) -> str:
    """``url`` if webhooks may be sent to it, else :class:`WebhookUrlRefused`."""
    target_resolve(url, resolve=resolve)
    return url
