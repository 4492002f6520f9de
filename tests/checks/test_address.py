"""address: private, loopback, link-local and metadata addresses refused in every spelling."""

from __future__ import annotations

import pytest

from duraguard.checks import address
from duraguard.checks.address import address_allowed, parse_ipv4
from duraguard.engine import evaluate

REFUSED = [
    "http://169.254.169.254/latest/meta-data",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://0/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[0:0:0:0:0:ffff:7f00:1]/",
    "http://[2002:7f00:1::]/",
    "http://[fd00:ec2::254]/latest",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/",
    "localhost:8080",
    "http://api.internal/x",
    "http://10.0.0.5/",
    "http://192.168.1.1/",
    "http://100.100.100.200/",
    "http://１２７.０.０.１/",
    "http://%31%32%37.0.0.1/",
    "http://user@169.254.169.254:80/",
    "http://169.254.169.254./",
    "http://127.0.0.1.nip.io/",
    "file:///etc/passwd",
    "gopher://example.org/",
]
ALLOWED = [
    "https://example.org/a",
    "example.org",
    "8.8.8.8",
    "https://[2606:4700::1111]/",
    "https://api.github.com:443/x",
]


@pytest.mark.parametrize("target", REFUSED)
def test_address_refuses_every_spelling_of_an_internal_address(target: str) -> None:
    ok, why = address_allowed(target)
    assert not ok and why


@pytest.mark.parametrize("target", ALLOWED)
def test_address_allows_public_addresses(target: str) -> None:
    assert address_allowed(target) == (True, "")


def test_address_reads_ipv4_the_way_inet_aton_does() -> None:
    assert str(parse_ipv4("0x7f.1")) == "127.0.0.1"
    assert str(parse_ipv4("3232235777")) == "192.168.1.1"
    assert parse_ipv4("256.1.1.1") is None
    assert parse_ipv4("1.2.3.4.5") is None


def test_address_allow_list_takes_names_patterns_ips_and_networks() -> None:
    assert address_allowed("http://10.1.2.3/", allow=["10.0.0.0/8"])[0]
    assert address_allowed("http://wiki.corp.internal/", allow=["*.corp.internal"])[0]
    assert address_allowed("http://10.0.0.9/", allow=["10.0.0.9"])[0]
    assert not address_allowed("http://10.0.0.8/", allow=["10.0.0.9"])[0]


async def test_address_kind_checks_every_url_in_a_tool_call() -> None:
    result = await evaluate(
        [address()],
        {"q": "see http://169.254.169.254/x", "page": "https://example.org"},
        tool="fetch",
    )
    assert result.tripped and result.verdict.check == "address"
    assert result.verdict.detections[0].path == "#/q"


async def test_address_kind_checks_a_bare_egress_host() -> None:
    assert (await evaluate([address()], "metadata.google.internal", placement="egress")).tripped
    assert not (await evaluate([address()], "https://example.org/x", placement="egress")).tripped


async def test_address_kind_respects_its_allow_list() -> None:
    assert not (
        await evaluate([address(allow=["10.0.0.0/8"])], {"url": "http://10.0.0.1/"}, tool="fetch")
    ).tripped
