"""The codec endpoint answers only its own Host, its Web UI's origin and JSON bodies (issue 24,
class 4): a page that rebinds its DNS name to 127.0.0.1, or posts text/plain or a form to it
from another site, reads nothing, while the Web UI's own calls (a preflight, then POST /decode
with JSON, with and without a token) work."""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from temporalio.api.common.v1 import Payload

from duraguard.cli import main
from duraguard.codec import AesGcmCodec, CodecServer, new_key

UI = "http://localhost:8233"
TOKEN = "t" * 32
SECRET = b'"card 4111 1111 1111 1111"'


@pytest.fixture(scope="module")
def codec() -> AesGcmCodec:
    return AesGcmCodec([("k1", base64.b64decode(new_key()))])


@pytest.fixture(scope="module")
def sealed(codec: AesGcmCodec) -> bytes:
    [p] = codec.encode_sync([Payload(metadata={"encoding": b"json/plain"}, data=SECRET)])
    body = {
        "payloads": [
            {
                "metadata": {k: base64.b64encode(v).decode() for k, v in p.metadata.items()},
                "data": base64.b64encode(p.data).decode(),
            }
        ]
    }
    return json.dumps(body).encode()


@pytest.fixture(scope="module")
def open_endpoint(codec: AesGcmCodec) -> Iterator[CodecServer]:
    with CodecServer(codec, cors_origins=[UI]) as server:
        yield server


@pytest.fixture(scope="module")
def token_endpoint(codec: AesGcmCodec) -> Iterator[CodecServer]:
    with CodecServer(codec, cors_origins=[UI], token=TOKEN) as server:
        yield server


def _send(
    server: CodecServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One raw request, with exactly the headers given (``Host`` too, or none at all)."""
    url = urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        given = dict(headers or {})
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in given.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _own_host(server: CodecServer) -> str:
    return urlsplit(server.url).netloc


def _decrypted(reply: bytes) -> bool:
    return base64.b64encode(SECRET) in reply or SECRET in reply


# -- the Web UI's own calls -----------------------------------------------------------------------


@pytest.mark.parametrize("with_token", [False, True], ids=["loopback-open", "with-token"])
def test_the_web_ui_preflight_then_json_decode_works(
    open_endpoint: CodecServer, token_endpoint: CodecServer, sealed: bytes, with_token: bool
) -> None:
    server = token_endpoint if with_token else open_endpoint
    asked = "content-type,x-namespace" + (",authorization" if with_token else "")
    status, headers, _ = _send(
        server,
        "OPTIONS",
        "/decode",
        headers={
            "Host": _own_host(server),
            "Origin": UI,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": asked,
        },
    )
    assert status == 204 and headers["access-control-allow-origin"] == UI
    assert all(h in headers["access-control-allow-headers"] for h in asked.split(","))
    ui = {
        "Host": _own_host(server),
        "Origin": UI,
        "Content-Type": "application/json",
        "X-Namespace": "default",
        "Sec-Fetch-Site": "same-site",
    }
    if with_token:
        status, _, _ = _send(server, "POST", "/decode", sealed, ui)
        assert status == 401
        ui["Authorization"] = f"Bearer {TOKEN}"
    status, headers, reply = _send(server, "POST", "/decode", sealed, ui)
    assert status == 200 and headers["access-control-allow-origin"] == UI
    assert _decrypted(reply)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST"])
def test_loopback_names_and_no_origin_work_for_the_cli(
    open_endpoint: CodecServer, sealed: bytes, host: str
) -> None:
    port = urlsplit(open_endpoint.url).port
    status, _, reply = _send(
        open_endpoint,
        "POST",
        "/decode",
        sealed,
        {"Host": f"{host}:{port}", "Content-Type": "application/json; charset=utf-8"},
    )
    assert status == 200 and _decrypted(reply)


# -- everything else is refused before a payload is read ------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",  # a rebound page sends its own name
        "evil.example:8081",
        "localhost.evil.example",
        "localtest.me",  # public names that resolve to 127.0.0.1
        "127.0.0.1.nip.io",
        "7f000001.nip.io",
        "lvh.me",
        "10.0.0.5",  # IP literals other than loopback
        "192.168.1.20:8081",
        "[2001:db8::1]:8081",
        "0.0.0.0",
        "",
    ],
)
@pytest.mark.parametrize("path", ["/decode", "/encode"])
def test_another_host_is_refused(
    open_endpoint: CodecServer, sealed: bytes, host: str, path: str
) -> None:
    headers = {"Content-Type": "application/json"}
    if host:
        headers["Host"] = host
    status, _, reply = _send(open_endpoint, "POST", path, sealed, headers)
    assert status == 421, reply
    assert not _decrypted(reply) and b"payloads" not in reply


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json-patch+json",
        "",
        None,
    ],
)
@pytest.mark.parametrize("server_kind", ["open", "token"])
def test_a_body_a_page_may_send_without_a_preflight_is_refused(
    open_endpoint: CodecServer,
    token_endpoint: CodecServer,
    sealed: bytes,
    content_type: str | None,
    server_kind: str,
) -> None:
    server = open_endpoint if server_kind == "open" else token_endpoint
    headers = {"Host": _own_host(server), "Authorization": f"Bearer {TOKEN}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    status, _, reply = _send(server, "POST", "/decode", sealed, headers)
    assert status == 415, reply
    assert not _decrypted(reply)


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "null", "http://localhost:9999", "https://localhost:8233", "file://"],
)
def test_a_page_of_another_origin_is_refused_and_gets_no_cors_grant(
    open_endpoint: CodecServer, sealed: bytes, origin: str
) -> None:
    own = _own_host(open_endpoint)
    status, headers, _ = _send(
        open_endpoint,
        "OPTIONS",
        "/decode",
        headers={"Host": own, "Origin": origin, "Access-Control-Request-Method": "POST"},
    )
    assert status == 403 and "access-control-allow-origin" not in headers
    for content_type in ("application/json", "text/plain"):
        status, headers, reply = _send(
            open_endpoint,
            "POST",
            "/decode",
            sealed,
            {"Host": own, "Origin": origin, "Content-Type": content_type},
        )
        assert status == 403 and "access-control-allow-origin" not in headers
        assert not _decrypted(reply)


def test_an_allowed_host_name_is_taken_and_only_that_one(codec: AesGcmCodec, sealed: bytes) -> None:
    with CodecServer(codec, allowed_hosts=["codec.example.org"]) as server:
        ok = {"Content-Type": "application/json"}
        status, _, reply = _send(
            server, "POST", "/decode", sealed, {**ok, "Host": "codec.example.org"}
        )
        assert status == 200 and _decrypted(reply)
        status, _, _ = _send(server, "POST", "/decode", sealed, {**ok, "Host": "other.example.org"})
        assert status == 421


def test_the_cli_takes_allowed_hosts_and_says_what_it_answers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from duraguard.codec import ENV_VAR

    def stop(self: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setenv(ENV_VAR, f"k1:{new_key()}")
    monkeypatch.setattr(CodecServer, "serve_forever", stop)
    assert main(["codec-server", "--port", "0", "--allowed-host", "codec.example.org"]) == 0
    out = capsys.readouterr().out
    assert "answers to Host: 127.0.0.1, ::1, codec.example.org, localhost" in out
