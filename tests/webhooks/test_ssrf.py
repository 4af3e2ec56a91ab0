"""SSRF: every internal address form is refused at registration and at each attempt, the name checked
is the IDNA-2008 name httpx connects to, and the POST goes to the address that was checked."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from memory.models import WebhookAttempt, WebhookDelivery
from memory.services.tree import Actor
from memory.services.webhook_targets import WebhookUrlRefused, address_is_public, target_resolve, url_check
from memory.services.webhooks import webhook_endpoint_create
from tests.factories import SubjectFactory, TenantFactory
from tests.webhooks.test_delivery import apply_seed
from workers import webhook_http

ACTOR = Actor.system("tests")

pytestmark = pytest.mark.django_db

INTERNAL_FORMS = [
    "http://0x7f000001/",  # hex
    "http://2130706433/",  # one decimal number
    "http://127.1/",  # short form
    "http://0177.0.0.1/",  # octal
    "http://0x7f.0.0.1/",
    "http://017700000001/",
    "http://10.1/",
    "http://[::ffff:7f00:1]/",  # IPv4-mapped
    "http://[::ffff:10.0.0.1]/",
    "http://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
    "http://[64:ff9b:1::a00:1]/",  # local-use NAT64 of 10.0.0.1
    "http://[2002:7f00:1::1]/",  # 6to4 of 127.0.0.1
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[fe80::1%25eth0]/",
    "http://[fd00::1]/",
    "http://[::]/",
    "http://0/",
    "http://router.home.arpa/",
    "http://printer.localdomain/",
]


def fake_dns(monkeypatch, answers: dict[str, list[str]]) -> list[str]:
    """``socket.getaddrinfo`` answering from ``answers`` (literal addresses as themselves); the names
    asked are returned, in order."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        asked.append(host)
        if host in answers:
            family = lambda a: socket.AF_INET6 if ":" in a else socket.AF_INET  # noqa: E731
            return [(family(a), socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in str(host) else socket.AF_INET, str(host))
        except OSError:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.parametrize("url", INTERNAL_FORMS)
def test_every_internal_address_form_is_refused_at_registration_and_at_delivery(url, monkeypatch):
    fake_dns(monkeypatch, {})
    for resolve in (False, True):
        with pytest.raises(WebhookUrlRefused):
            target_resolve(url, resolve=resolve)


def test_the_api_refuses_numeric_forms_with_a_json_400(tenant, make_api_client, monkeypatch):
    fake_dns(monkeypatch, {})
    client, _ = make_api_client(tenant, scopes=("admin",))
    for url in ("http://0x7f000001/", "http://2130706433/", "http://[64:ff9b::a9fe:a9fe]/"):
        answer = client.post("/v1/webhooks", {"url": url, "event_types": ["version.applied"]}, format="json")
        assert answer.status_code == 400, url
        assert answer.json()["code"] == "invalid_url"


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "64:ff9b::808:808"]
)
def test_public_addresses_pass(address):
    assert address_is_public(address)


def test_names_resolving_inside_are_refused_without_naming_what_they_resolve_to(monkeypatch):
    fake_dns(
        monkeypatch,
        {
            "mixed.example.com": ["93.184.215.14", "10.0.0.7"],  # any internal address is enough
            "nat64.example.com": ["64:ff9b::7f00:1"],
            "mapped.example.com": ["::ffff:169.254.169.254"],
        },
    )
    for host in ("mixed.example.com", "nat64.example.com", "mapped.example.com"):
        for resolve in (False, True):
            with pytest.raises(WebhookUrlRefused) as refused:
                url_check(f"https://{host}/hook", resolve=resolve)
            message = refused.value.message
            assert host not in message and "10.0.0.7" not in message and "7f00" not in message


def test_the_checked_name_is_the_idna_2008_name_httpx_connects_to(monkeypatch):
    # IDNA-2003 maps faß to fass; httpx (IDNA-2008) connects to xn--fa-hia. Only the latter counts.
    asked = fake_dns(monkeypatch, {"fass.example": ["93.184.215.14"], "xn--fa-hia.example": ["127.0.0.1"]})
    assert httpx.URL("http://faß.example/").raw_host == b"xn--fa-hia.example"
    for resolve in (False, True):
        with pytest.raises(WebhookUrlRefused):
            url_check("http://faß.example/hook", resolve=resolve)
    assert set(asked) == {"xn--fa-hia.example"}


def test_a_name_that_does_not_resolve_is_accepted_at_registration_and_refused_at_delivery(monkeypatch):
    fake_dns(monkeypatch, {})
    assert url_check("https://later.example.com/hook") == "https://later.example.com/hook"
    with pytest.raises(WebhookUrlRefused, match="does not resolve"):
        url_check("https://later.example.com/hook", resolve=True)


def test_https_is_pinned_to_the_checked_address_with_the_name_as_host_and_sni(monkeypatch):
    fake_dns(monkeypatch, {"hooks.example.com": ["93.184.215.14"]})
    target = target_resolve("https://hooks.example.com:8443/in?x=1", resolve=True)
    url, headers, extensions = webhook_http.pinned(target)
    assert str(url) == "https://93.184.215.14:8443/in?x=1"
    assert headers == {"Host": "hooks.example.com:8443"}
    assert extensions == {"sni_hostname": "hooks.example.com"}
    fake_dns(monkeypatch, {"v6.example.com": ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]})
    url, _, _ = webhook_http.pinned(target_resolve("http://v6.example.com/", resolve=True))
    assert url.raw_host == b"2606:2800:21f:cb07:6820:80da:af6b:8b2c" and str(url).startswith("http://[2606:")


def test_a_delivery_connects_to_the_address_it_checked_not_to_a_second_lookup(
    receiver, commit, monkeypatch, settings
):
    """DNS rebinding: the first answer is checked, every later one would point elsewhere. The POST
    reaches the checked address (our loopback receiver, private targets allowed only for the check's
    verdict) and the name is looked up once per attempt."""
    port = httpx.URL(receiver.url).port
    answers = iter([["127.0.0.1"]] + [["10.9.9.9"]] * 10)
    asked: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, p, *args, **kwargs):
        asked.append(host)
        if host == "hooks.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, p)) for a in next(answers)]
        return real(host, p, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    monkeypatch.setattr("memory.services.webhook_targets.address_is_public", lambda a: a == "127.0.0.1")
    tenant = TenantFactory()
    subject = SubjectFactory(tenant=tenant)
    settings.PERSONATREE = {
        **settings.PERSONATREE,
        "WEBHOOK_ALLOW_PRIVATE_TARGETS": False,
        "WEBHOOK_MAX_ATTEMPTS": 1,
        "WEBHOOK_TIMEOUT_S": 1.0,
    }
    endpoint, _ = webhook_endpoint_create(
        actor=ACTOR,
        tenant=tenant,
        url=f"http://hooks.example.com:{port}/hook",
        event_types=["version.applied"],
    )
    answers = iter([["127.0.0.1"]] + [["10.9.9.9"]] * 10)  # registration looked it up once already
    asked.clear()

    apply_seed(subject, commit)

    (request,) = receiver.requests
    assert request.headers["host"] == f"hooks.example.com:{port}"
    assert json.loads(request.body)["type"] == "version.applied"
    assert asked.count("hooks.example.com") == 1
    assert WebhookDelivery.objects.get(endpoint=endpoint).status == "delivered"


def test_a_name_that_turns_internal_after_registration_is_refused_at_the_attempt(
    receiver, commit, monkeypatch, settings
):
    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_ALLOW_PRIVATE_TARGETS": False}
    fake_dns(monkeypatch, {"hooks.example.com": ["93.184.215.14"]})
    tenant = TenantFactory()
    subject = SubjectFactory(tenant=tenant)
    endpoint, _ = webhook_endpoint_create(
        actor=ACTOR, tenant=tenant, url="http://hooks.example.com/hook", event_types=["version.applied"]
    )
    fake_dns(monkeypatch, {"hooks.example.com": ["169.254.169.254"]})

    apply_seed(subject, commit)

    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and delivery.attempts == 1
    error = WebhookAttempt.objects.get(delivery=delivery).error
    assert error.startswith("refused:") and "169.254" not in error and "hooks.example.com" not in error


def test_a_slow_dns_answer_neither_hangs_registration_nor_lets_an_attempt_through(monkeypatch, settings):
    import time

    from memory.services import webhook_targets

    settings.PERSONATREE = {**settings.PERSONATREE, "WEBHOOK_TIMEOUT_S": 0.3}
    monkeypatch.setattr(webhook_targets, "REGISTRATION_LOOKUP_S", 0.2)

    def slow(host, port, *args, **kwargs):
        time.sleep(2)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    started = time.monotonic()
    assert url_check("https://slow.example.com/") == "https://slow.example.com/"  # checked again later
    with pytest.raises(WebhookUrlRefused, match="does not resolve"):
        url_check("https://slow.example.com/", resolve=True)
    assert time.monotonic() - started < 1.5
