"""The codec endpoint's HTTP requests (:class:`duraguard.codec.CodecServer`): each one checked,
in this order, before any payload is read: the ``Host`` (421), a browser's ``Origin`` (403,
preflight included), the content type (415, ``/encode`` and ``/decode`` only) and the bearer
token (401, 403). See :mod:`duraguard.codec` for why each."""

from __future__ import annotations

import json
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import urlsplit

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads


class _Codec(Protocol):
    def encode_sync(self, payloads: Iterable[Payload]) -> list[Payload]: ...
    def decode_sync(self, payloads: Iterable[Payload]) -> list[Payload]: ...


class Served(Protocol):
    """What a request reads of the server it came to (:class:`duraguard.codec.CodecServer`)."""

    @property
    def codec(self) -> _Codec: ...
    @property
    def cors_origins(self) -> tuple[str, ...]: ...
    @property
    def url(self) -> str: ...
    def origin_ok(self, origin: str | None) -> bool: ...
    def host_ok(self, header: str | None) -> bool: ...
    def authorized(self, header: str | None) -> int: ...


MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest request body the codec endpoint reads; a larger one gets 413."""


def host_name(header: str | None) -> str:
    """The name in a ``Host`` header, lower case, without its port or IPv6 brackets."""
    host = (header or "").strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class _Handler(BaseHTTPRequestHandler):
    """The codec endpoint's requests; :func:`handler_for` binds it to one server."""

    server_version = "duraguard-codec/1"
    codec_server: Served

    def log_message(self, format: str, *args: Any) -> None:
        pass  # payloads are sensitive; the access log adds nothing

    def _cors(self) -> None:
        origin = self.headers.get("Origin")
        if origin and self.codec_server.origin_ok(origin):
            self.send_header("Access-Control-Allow-Origin", origin.rstrip("/"))
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
            self.send_header(
                "Access-Control-Allow-Headers", "content-type, x-namespace, authorization"
            )
            self.send_header("Access-Control-Allow-Credentials", "true")
            self.send_header("Vary", "Origin")

    def _reply(self, status: int, body: dict[str, Any], challenge: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self._cors()
        if challenge:
            self.send_header("WWW-Authenticate", 'Bearer realm="duraguard-codec"')
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, status: int, message: str, challenge: bool = False) -> None:
        self.close_connection = True
        self._reply(status, {"message": message}, challenge)

    def _from_elsewhere(self) -> bool:
        """Refuse a request with another ``Host`` or from another origin; whether it was one."""
        server = self.codec_server
        host = self.headers.get("Host")
        if not server.host_ok(host):
            self._refuse(
                421,
                f"unknown Host {(host or '')[:100]!r}: reach the codec endpoint by its own "
                f"address ({server.url}), or name this host with --allowed-host",
            )
            return True
        origin = self.headers.get("Origin")
        if not server.origin_ok(origin):
            allowed = ", ".join(server.cors_origins) or "none"
            self._refuse(
                403,
                f"a request from the page at {(origin or '')[:100]!r} is refused; the origins that may "
                f"call are {allowed} (add the Web UI's with --cors-origin)",
            )
            return True
        return False

    def _refused(self) -> bool:
        """Refuse an encode or decode that is not JSON or lacks the token; whether it was."""
        kind = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            self._refuse(415, "send the payloads as JSON (Content-Type: application/json)")
            return True
        status = self.codec_server.authorized(self.headers.get("Authorization"))
        if status == 401:
            message = "this codec endpoint needs Authorization: Bearer <token>"
            self._refuse(401, message, challenge=True)
        elif status == 403:
            self._refuse(403, "the bearer token is not the one this endpoint takes")
        return status in (401, 403)

    def do_OPTIONS(self) -> None:
        if self._from_elsewhere():
            return
        self.send_response(204)
        self._cors()
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _payloads(self) -> Payloads | None:
        """The request's payloads, or ``None`` once a refusal has been sent."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0 or length > MAX_BODY_BYTES:
                self._refuse(413, f"a body is at most {MAX_BODY_BYTES} bytes")
                return None
            return json_format.Parse(self.rfile.read(length) or b"{}", Payloads())
        except (ValueError, json_format.ParseError) as e:
            self._reply(400, {"message": f'body must be JSON {{"payloads": [...]}}: {e}'})
            return None

    def do_POST(self) -> None:
        if self._from_elsewhere() or self._refused():
            return
        path = urlsplit(self.path).path.rstrip("/")
        op = path.rsplit("/", 1)[-1]
        if op not in ("encode", "decode"):
            self._reply(404, {"message": f"unknown path {path!r}; use /encode or /decode"})
            return
        payloads = self._payloads()
        if payloads is None:
            return
        codec = self.codec_server.codec
        try:
            fn = codec.encode_sync if op == "encode" else codec.decode_sync
            result = Payloads(payloads=fn(payloads.payloads))
        except ValueError as e:  # CodecError: an unknown key id, a payload that fails
            self._reply(400, {"message": str(e)})
            return
        self._reply(200, json_format.MessageToDict(result))


def handler_for(server: Served) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to ``server``."""
    return type("Handler", (_Handler,), {"codec_server": server})
