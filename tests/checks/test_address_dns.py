"""address(dns=True): every A/AAAA answer judged, resolved off the event loop, pinned, fail closed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from duraguard.checks import address
from duraguard.checks._dns import pinned, system_resolver
from duraguard.engine import evaluate
from duraguard.guardrail import Resources


def _zone(answers: dict[str, list[str]]) -> Callable[[str], list[str]]:
    """A resolver over a fixed zone that records every name it was asked."""

    def resolve(host: str) -> list[str]:
        resolve.asked.append(host)  # type: ignore[attr-defined]
        if host not in answers:
            raise OSError(f"NXDOMAIN {host}")
        return answers[host]

    resolve.asked = []  # type: ignore[attr-defined]
    return resolve


ZONE = {
    "api.example.org": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "rebind.example.net": ["93.184.216.34", "127.0.0.1"],  # one public answer, one inside
    "sneaky.example.com": ["169.254.169.254"],
    "mapped.example.com": ["::ffff:10.0.0.1"],
    "empty.example.com": [],
    "garbage.example.com": ["not-an-address"],
    "wiki.example.com": ["10.1.2.3"],
}


async def _check(value: Any, resolve: Any, **settings: Any) -> Any:
    resources = Resources(extra={"test-dns": resolve})
    guard = address(dns=True, resolver="test-dns", **settings)
    return await evaluate([guard], value, tool="fetch", resources=resources)


async def test_dns_mode_is_off_by_default_and_resolves_nothing() -> None:
    resolve = _zone(ZONE)
    resources = Resources(extra={"test-dns": resolve})
    result = await evaluate(
        [address()], {"url": "https://rebind.example.net/"}, tool="fetch", resources=resources
    )
    assert not result.tripped
    assert resolve.asked == []  # type: ignore[attr-defined]


async def test_dns_mode_allows_a_public_name_and_records_every_answer() -> None:
    resolve = _zone(ZONE)
    result = await _check({"url": "https://api.example.org/v1"}, resolve)
    assert result.verdict.action == "allow"
    pins = [d for d in result.verdicts[0].detections if d.rule == "address.resolved"]
    assert [(d.path, d.detail, d.detected) for d in pins] == [
        ("#/url", "api.example.org=93.184.216.34,2606:2800:220:1:248:1893:25c8:1946", False)
    ]
    assert pinned(result) == {
        "api.example.org": ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946")
    }
    assert pinned(result.verdicts[0]) == pinned(result.verdicts[0].detections) == pinned(result)


@pytest.mark.parametrize(
    ("url", "inside"),
    [
        ("https://rebind.example.net/", "loopback address (127.0.0.1)"),
        ("http://sneaky.example.com/latest/meta-data/", "cloud metadata service (169.254.169.254)"),
        ("http://mapped.example.com/", "private or reserved address (10.0.0.1)"),
    ],
)
async def test_dns_mode_refuses_a_name_if_any_answer_is_internal(url: str, inside: str) -> None:
    result = await _check({"url": url}, _zone(ZONE))
    assert result.verdict.action == "deny" and result.outcome == "complete"
    assert inside in (result.verdict.reason or "")
    rules = [d.rule for d in result.verdict.detections]
    assert rules == ["address.resolved", "address.not-allowed"]  # the audit shows the answers


@pytest.mark.parametrize(
    "url",
    ["https://nxdomain.example/", "https://empty.example.com/", "https://garbage.example.com/"],
)
async def test_dns_mode_refuses_a_name_it_cannot_resolve(url: str) -> None:
    result = await _check({"url": url}, _zone(ZONE))
    assert result.verdict.action == "deny"
    assert result.outcome == "partial"  # it could not decide: never an allow
    assert "could not resolve" in (result.verdict.reason or "")
    assert [d.rule for d in result.verdict.detections] == ["address.dns-error"]


async def test_dns_mode_allow_list_covers_resolved_addresses() -> None:
    resolve = _zone(ZONE)
    assert (await _check({"url": "https://wiki.example.com/"}, resolve)).tripped
    allowed = await _check({"url": "https://wiki.example.com/"}, resolve, allow=["10.0.0.0/8"])
    assert not allowed.tripped


async def test_dns_mode_does_not_resolve_ip_literals_or_names_already_refused() -> None:
    resolve = _zone(ZONE)
    value = {"a": "https://8.8.8.8/", "b": "https://[2606:4700::1111]/"}
    assert not (await _check(value, resolve)).tripped
    assert (await _check({"url": "http://metadata.google.internal/"}, resolve)).tripped
    assert resolve.asked == []  # type: ignore[attr-defined]


async def test_dns_mode_resolves_each_name_once_for_many_urls() -> None:
    resolve = _zone(ZONE)
    value = {"links": ["https://api.example.org/a", "https://api.example.org/b"]}
    assert not (await _check(value, resolve)).tripped
    assert resolve.asked == ["api.example.org"]  # type: ignore[attr-defined]


async def test_dns_mode_awaits_an_async_resolver() -> None:
    async def resolve(host: str) -> list[str]:
        await asyncio.sleep(0)
        return ["10.0.0.7"]

    result = await _check({"url": "https://intranet.example.com/"}, resolve)
    assert result.tripped and "10.0.0.7" in (result.verdict.reason or "")


async def test_dns_mode_runs_a_blocking_resolver_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def resolve(host: str) -> list[str]:
        seen.append(threading.get_ident())
        return ["93.184.216.34"]

    assert not (await _check({"url": "https://api.example.org/"}, resolve)).tripped
    assert seen and loop_thread not in seen


async def test_dns_mode_refuses_when_the_resolver_hangs_and_the_loop_keeps_running() -> None:
    release = threading.Event()
    ticks = 0

    def resolve(host: str) -> list[str]:
        release.wait(timeout=30)
        return ["93.184.216.34"]

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    tick = asyncio.create_task(ticker())
    try:
        result = await _check({"url": "https://slow.example.org/"}, resolve, timeout=0.3)
    finally:
        release.set()
        tick.cancel()
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert ticks > 1  # the event loop ran while the resolver blocked


async def test_dns_mode_with_an_unregistered_resolver_refuses_naming_the_fix() -> None:
    result = await evaluate(
        [address(dns=True, resolver="missing")], {"url": "https://api.example.org/"}, tool="fetch"
    )
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert "no DNS resolver named 'missing'" in (result.verdict.reason or "")


async def test_dns_mode_caps_how_many_names_one_check_resolves() -> None:
    many = {"links": [f"https://h{i}.example.org/" for i in range(20)]}
    result = await _check(many, _zone({f"h{i}.example.org": ["93.184.216.34"] for i in range(20)}))
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert "over the cap of 16" in (result.verdict.reason or "")


async def test_the_system_resolver_answers_localhost_without_the_network() -> None:
    answers = await system_resolver("localhost")
    assert {"127.0.0.1", "::1"} & set(answers)
