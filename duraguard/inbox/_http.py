"""What every route of the inbox's HTTP surface shares: its settings, its security headers,
its JSON answers and the static files of the page (used by :mod:`duraguard.inbox._app`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from starlette.responses import JSONResponse, Response
from starlette.staticfiles import StaticFiles

from ._access import Access

MAX_BODY = 256 * 1024
STATIC = __file__.rsplit("/", 1)[0] + "/static"  # this module sits beside _app
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class Settings:
    """How the app behaves (the CLI builds this from its flags).

    Attributes:
        access: who may do what (:meth:`Access.open` on loopback).
        ui_url: the Temporal Web UI, for links to each run.
        namespace: the namespace, for those links.
        allowed_hosts: Host header names accepted besides the loopback ones (empty: any, once
            an access file is set; loopback names only in the open inbox).
        secure_cookies: mark the session cookie Secure (the inbox is served over HTTPS).
        heartbeat: seconds between keep-alive comments on the event stream.
    """

    access: Access
    ui_url: str | None = None
    namespace: str = "default"
    allowed_hosts: tuple[str, ...] = ()
    secure_cookies: bool = False
    heartbeat: float = 15.0


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=SECURITY_HEADERS)


def _ok(body: Any) -> JSONResponse:
    return JSONResponse(body, headers=SECURITY_HEADERS)


class _Static(StaticFiles):
    """The page's scripts and styles, with the page's security headers; the page itself only
    at ``/`` (served from here it could be framed)."""

    async def get_response(self, path: str, scope: Any) -> Response:
        if path.strip("/") == "index.html":
            return _error("not found", 404)
        response = await super().get_response(path, scope)
        response.headers.update(SECURITY_HEADERS)
        return response


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0] if err.errors() else {"loc": (), "msg": "invalid"}
    where = ".".join(str(p) for p in first.get("loc", ())) or "(the value)"
    return f"{where}: {first.get('msg', 'invalid')}"[:300]


__all__: list[str] = [
    "MAX_BODY",
    "SECURITY_HEADERS",
    "STATIC",
    "Settings",
    "_Static",
    "_error",
    "_first_error",
    "_ok",
]
