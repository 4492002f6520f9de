"""The AES-GCM payload codec and the Web UI's codec endpoint."""

from __future__ import annotations

import base64
import dataclasses
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

from duraguard._types import PassResult, Verdict
from duraguard._wire import CheckResponse
from duraguard.cli import main
from duraguard.codec import (
    ENCODING,
    ENV_VAR,
    KEY_ID_META,
    AesGcmCodec,
    CodecError,
    CodecServer,
    codec_from_env,
    new_key,
    parse_keys,
)

UI = "http://127.0.0.1:8233"


def _key() -> bytes:
    return base64.b64decode(new_key())


def _plain(text: str = '"card 4111 1111 1111 1111"') -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


async def test_round_trip_restores_the_payload_and_hides_its_bytes() -> None:
    codec = AesGcmCodec([("k1", _key())])
    original = _plain()
    [sealed] = await codec.encode([original])
    assert sealed.metadata["encoding"] == ENCODING
    assert sealed.metadata[KEY_ID_META] == b"k1"
    assert b"4111" not in sealed.data and b"json/plain" not in sealed.data
    assert await codec.decode([sealed]) == [original]


async def test_each_encryption_uses_a_fresh_nonce() -> None:
    codec = AesGcmCodec([("k1", _key())])
    a, b = await codec.encode([_plain(), _plain()])
    assert a.data[:12] != b.data[:12]
    assert a.data != b.data


async def test_payloads_that_are_not_encrypted_pass_through_decode() -> None:
    codec = AesGcmCodec([("k1", _key())])
    assert await codec.decode([_plain()]) == [_plain()]


async def test_rotation_new_key_first_still_reads_old_payloads() -> None:
    old_key, new = _key(), _key()
    before = AesGcmCodec([("k1", old_key)])
    [written_before] = await before.encode([_plain()])
    after = AesGcmCodec([("k2", new), ("k1", old_key)])
    assert after.key_id == "k2"
    assert await after.decode([written_before]) == [_plain()]
    [written_after] = await after.encode([_plain()])
    assert written_after.metadata[KEY_ID_META] == b"k2"
    with pytest.raises(CodecError, match=r"key id 'k2'.*known: k1"):
        await before.decode([written_after])


async def test_an_altered_payload_fails_authentication() -> None:
    codec = AesGcmCodec([("k1", _key())])
    [sealed] = await codec.encode([_plain()])
    data = bytearray(sealed.data)
    data[-1] ^= 0x01
    tampered = Payload(metadata=dict(sealed.metadata), data=bytes(data))
    with pytest.raises(CodecError, match="failed authentication"):
        await codec.decode([tampered])


async def test_a_payload_relabelled_with_another_key_id_fails() -> None:
    codec = AesGcmCodec([("k1", _key()), ("k2", _key())])
    [sealed] = await codec.encode([_plain()])
    relabelled = Payload(
        metadata={"encoding": ENCODING, KEY_ID_META: b"k2"}, data=bytes(sealed.data)
    )
    with pytest.raises(CodecError, match="failed authentication"):
        await codec.decode([relabelled])


async def test_unknown_key_id_names_the_id_and_the_fix() -> None:
    writer = AesGcmCodec([("old", _key())])
    reader = AesGcmCodec([("new", _key())])
    [sealed] = await writer.encode([_plain()])
    with pytest.raises(CodecError, match=rf"'old'.*not in \${ENV_VAR}.*add that key"):
        await reader.decode([sealed])


def test_keys_from_the_environment_in_order() -> None:
    k1, k2 = new_key(), new_key(128)
    codec = AesGcmCodec.from_env(environ={ENV_VAR: f" k2:{k2} , k1:{k1} "})
    assert codec.key_ids == ("k2", "k1")
    assert codec.key_id == "k2"
    assert codec_from_env({}) is None


_KEY = base64.b64encode(bytes(range(32))).decode()
_OTHER_KEY = base64.b64encode(bytes(range(32, 64))).decode()
"""Fixed keys: a test's name holds its parameters, the same in every test process."""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "is not set"),
        ("justakey", "must be KEY_ID:BASE64_KEY"),
        ("k1:not base64!", "not valid base64"),
        (f"k1:{base64.b64encode(b'short').decode()}", "5 bytes"),
        (f"k1:{_KEY},k1:{_OTHER_KEY}", "listed twice"),
        (f"bad id:{_KEY}", "key id 'bad id'"),
    ],
)
def test_malformed_key_settings_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        AesGcmCodec.from_env(environ={ENV_VAR: spec})


def test_new_key_sizes() -> None:
    assert len(base64.b64decode(new_key())) == 32
    assert len(base64.b64decode(new_key(128))) == 16
    with pytest.raises(CodecError, match="128, 192 or 256"):
        new_key(100)
    assert parse_keys("a:" + new_key())[0][0] == "a"


async def test_the_data_converter_round_trips_a_check_response_through_the_codec() -> None:
    codec = AesGcmCodec([("k1", _key())])
    converter = dataclasses.replace(pydantic_data_converter, payload_codec=codec)
    resp = CheckResponse(
        results=(PassResult(verdict=Verdict.deny("card number", by="pii"), tool="refund"),),
        turn=1,
    )
    [payload] = await converter.encode([resp])
    assert payload.metadata["encoding"] == ENCODING
    assert await converter.decode([payload], [CheckResponse]) == [resp]


def test_codec_keygen_prints_an_entry_the_codec_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codec-keygen", "k7"]) == 0
    entry = capsys.readouterr().out.strip()
    assert AesGcmCodec.from_env(environ={ENV_VAR: entry}).key_id == "k7"
    assert main(["codec-keygen", "k8", "--bits", "128", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["key_id"] == "k8" and parse_keys(out["entry"])[0][1].__len__() == 16


def test_codec_server_without_keys_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert main(["codec-server", "--port", "0"]) == 2
    assert "codec-keygen" in capsys.readouterr().err


# -- the HTTP endpoint ---------------------------------------------------------------------


@pytest.fixture
def codec() -> AesGcmCodec:
    return AesGcmCodec([("k1", _key())])


@pytest.fixture
def endpoint(codec: AesGcmCodec) -> Iterator[CodecServer]:
    with CodecServer(codec, port=0, cors_origins=[UI]) as server:
        yield server


def _request(
    url: str, method: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], Any]:
    data = json.dumps(body).encode() if body is not None else None
    sent = {"Content-Type": "application/json"} if data is not None else {}
    req = urllib.request.Request(url, data=data, method=method, headers={**sent, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
            return resp.status, dict(resp.headers), json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def _as_json(p: Payload) -> dict[str, Any]:
    return {
        "metadata": {k: base64.b64encode(v).decode() for k, v in p.metadata.items()},
        "data": base64.b64encode(p.data).decode(),
    }


def test_endpoint_listens_on_localhost_only(endpoint: CodecServer) -> None:
    assert endpoint.url.startswith("http://127.0.0.1:")


def test_endpoint_answers_the_cors_preflight(endpoint: CodecServer) -> None:
    status, headers, _ = _request(
        endpoint.url + "/decode",
        "OPTIONS",
        headers={
            "Origin": UI,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-namespace",
        },
    )
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == UI
    assert "POST" in headers["Access-Control-Allow-Methods"]
    assert "x-namespace" in headers["Access-Control-Allow-Headers"]


def test_endpoint_gives_no_cors_grant_to_another_origin(endpoint: CodecServer) -> None:
    _, headers, _ = _request(
        endpoint.url + "/decode", "OPTIONS", headers={"Origin": "http://evil.example"}
    )
    assert "Access-Control-Allow-Origin" not in headers


async def test_endpoint_decodes_what_the_ui_sends(
    endpoint: CodecServer, codec: AesGcmCodec
) -> None:
    [sealed] = await codec.encode([_plain()])
    status, headers, body = _request(
        endpoint.url + "/decode?namespace=default",
        "POST",
        {"payloads": [_as_json(sealed)]},
        {"Content-Type": "application/json", "Origin": UI, "X-Namespace": "default"},
    )
    assert status == 200
    assert headers["Access-Control-Allow-Origin"] == UI
    [out] = body["payloads"]
    assert base64.b64decode(out["data"]) == _plain().data
    assert base64.b64decode(out["metadata"]["encoding"]) == b"json/plain"


def test_endpoint_encode_then_decode(endpoint: CodecServer) -> None:
    payloads = {"payloads": [_as_json(_plain('{"amount": 25}'))]}
    status, _, encoded = _request(endpoint.url + "/encode", "POST", payloads)
    assert status == 200
    meta = encoded["payloads"][0]["metadata"]
    assert base64.b64decode(meta["encoding"]) == ENCODING
    status, _, decoded = _request(endpoint.url + "/decode", "POST", encoded)
    assert status == 200 and decoded == payloads


async def test_endpoint_reports_an_unknown_key_as_400(endpoint: CodecServer) -> None:
    [sealed] = await AesGcmCodec([("other", _key())]).encode([_plain()])
    status, _, body = _request(endpoint.url + "/decode", "POST", {"payloads": [_as_json(sealed)]})
    assert status == 400 and "'other'" in body["message"]


def test_endpoint_refuses_unknown_paths_and_bad_bodies(endpoint: CodecServer) -> None:
    assert _request(endpoint.url + "/nope", "POST", {"payloads": []})[0] == 404
    assert _request(endpoint.url + "/decode", "POST", ["not", "payloads"])[0] == 400
