"""address: private, loopback, link-local and metadata addresses refused in every spelling."""

from __future__ import annotations

import pytest

from duraguard.checks import address
from duraguard.checks.address import address_allowed, parse_ip, parse_ipv4, targets, urls_in
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


# -- readings: WHATWG, Python, naive; extents in free text; normalisation -----------------------


@pytest.mark.parametrize(
    ("target", "inside_for"),
    [
        ("http://127.0.0.1\\@evil.com/", "whatwg"),  # backslash ends the authority for WHATWG
        ("http://evil.com\\@127.0.0.1/", "python"),  # urllib keeps it and splits at the last @
        ("http://foo@127.0.0.1 @evil.com/", "naive"),  # the first @, cut at the space
    ],
)
def test_address_refuses_where_any_one_parser_goes_inside(target: str, inside_for: str) -> None:
    from duraguard.checks._url import naive, python, whatwg

    readers = {"whatwg": whatwg, "python": python, "naive": naive}
    hosts = {name: read(target) for name, read in readers.items()}
    assert "127.0.0.1" in str(hosts[inside_for])
    assert not address_allowed(target)[0]


def test_address_splits_an_ipv6_zone_before_decoding_it() -> None:
    ok, why = address_allowed("http://[::ffff:127.0.0.1%176]/")
    assert not ok and "zone id" in why
    assert parse_ip("::ffff:127.0.0.1%176") == parse_ip("::ffff:127.0.0.1")


@pytest.mark.parametrize(
    "target",
    ["http://127.0.0.1\x00.evil.com/", "http://425.510.425.510/", "http://0o177.0.0.1/",
     "0://127.0.0.1:80;http://google.com:80/"],
)  # fmt: skip
def test_address_refuses_what_it_cannot_parse(target: str) -> None:
    ok, why = address_allowed(target)
    assert not ok and "cannot be parsed" in why


def test_address_reads_a_nested_scheme_inside() -> None:
    ok, why = address_allowed("jar:http://127.0.0.1!/")
    assert not ok and "loopback" in why and "inside jar:" in why
    ok, why = address_allowed("jar:https://example.org/lib.jar!/")
    assert not ok and "uses the jar: scheme" in why


@pytest.mark.parametrize(
    "target",
    ["http://192.0.0.192/", "http://metadata.tencentyun.com/", "http://168.63.129.16/",
     "http://[fd00:ec2::254]/", "http://instance-data/", "http://metadata.goog/",
     "http://100.100.100.200/", "https://kubernetes.default.svc/"],
)  # fmt: skip
def test_address_refuses_cloud_metadata_services_by_address_and_name(target: str) -> None:
    ok, why = address_allowed(target)
    assert not ok and "metadata" in why


def test_address_finds_a_url_past_a_quote_in_free_text() -> None:
    found = urls_in('fetch http://evil.com"@169.254.169.254/latest and go')
    assert 'http://evil.com"@169.254.169.254/latest' in found
    assert "http://evil.com" in found  # what a reader of the prose would cut
    # A host cut short by markup fails to parse only because of the markup: the cut that
    # parses decides, so an HTML link is not refused as unparsable.
    assert urls_in('<a href="https://example.org">x</a>') == ["https://example.org"]


@pytest.mark.parametrize(
    "text",
    ["open http://127.0.0.1\u200b/ now", "open http://127\u200d.0.0.1/ now",
     "open http://１２７.０.０.１/ now", "open http://127.0.0.1\u00ad/ now",
     "open http://①②⑦.⓪.⓪.①/ now", "open h\u200bttp://127.0.0.1/ now"],
)  # fmt: skip
async def test_address_reads_urls_in_normalised_text(text: str) -> None:
    assert (await evaluate([address()], {"note": text}, tool="post")).tripped


def test_targets_keeps_its_shape_for_the_policy_and_egress_callers() -> None:
    value = {"url": "https://example.org/?next=http://127.0.0.1/", "host": "db01", "n": 3}
    assert targets(value) == [
        ("#/url", "https://example.org/?next=http://127.0.0.1/"),
        ("#/url", "http://127.0.0.1/"),
        ("#/host", "db01"),
    ]
    assert targets("metadata.google.internal") == [("#", "metadata.google.internal")]
    assert targets("no urls here") == []


# -- bounds: hostile sizes refuse instead of stalling ---------------------------------------------


def test_a_url_longer_than_the_read_window_is_refused_unread() -> None:
    from duraguard.checks.address import MAX_URL

    hidden = "http://" + "a" * MAX_URL + "@127.0.0.1/"  # the host sits past any window
    ok, why = address_allowed(hidden)
    assert not ok and f"longer than {MAX_URL} characters" in why
    assert len(why) < 400  # the reason quotes the start, not the whole value


async def test_a_value_with_too_many_urls_refuses_as_undecided() -> None:
    many = " ".join(f"https://h{i}.example.org/" for i in range(400))
    result = await evaluate([address()], {"note": many}, tool="post")
    assert result.verdict.action == "deny" and result.outcome == "partial"
    assert [d.rule for d in result.verdict.detections] == ["address.too-many"]
    assert len(targets({"note": many})) == 257  # callers see the cap, never an unbounded list


async def test_a_big_value_is_judged_in_full() -> None:
    filler = "lorem ipsum " * 3000  # over the size read in a thread
    assert not (await evaluate([address()], {"a": filler + "https://example.org/"})).tripped
    assert (await evaluate([address()], {"a": filler + "http://169.254.169.254/"})).tripped


@pytest.mark.parametrize(
    "target",
    [
        "http://" + "é" * 64 + ".example/",  # a label over 63 characters
        "http://" + ".".join(["é" * 60] * 5) + "/",  # over 253 in all
        "http://xn--" + "a" * 80 + ".example/",  # punycode over 63
        "http://" + "".join(chr(0x4E00 + i) for i in range(1000)) + ".com/",
    ],
)
def test_an_international_host_longer_than_a_dns_name_is_refused_before_punycode(
    target: str,
) -> None:
    # Punycode takes time in the square of a label: 1,000 CJK characters took 0.45 s a URL.
    ok, why = address_allowed(target)
    assert not ok and "longer than a DNS name can be" in why
    assert len(why) < 600  # the reason quotes the start of the host, not all of it
