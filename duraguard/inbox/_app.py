"""The inbox's HTTP surface: the page, the JSON API and the event stream (Starlette).

::

    GET  /                 the page (static HTML, JS, CSS; no inline script)
    GET  /api/me           who you are, your right, your CSRF token       (401: sign in)
    POST /api/login        {"token": ...} -> a session cookie              /api/logout
    GET  /api/asks         what waits, newest first, and what closed lately
    GET  /api/ask?workflow_id=W&call_id=C    one ask with the run's verdicts so far
    POST /api/preview      {"workflow_id", "call_id", "edits"} -> how the guardrails judge them
    POST /api/statement    {"workflow_id", "call_id", "decision", "approver"?, "reason"?,
                            "edits"?, "ttl_seconds"?} -> {"decision", "statement"} to sign
    POST /api/decide       {"decision": {... "signature"}, "statement"?, "signal"?}
                            -> {"accepted", "reason"}: the worker's answer
    GET  /api/events       server-sent events: "version" whenever the list changes

Workflow and call ids travel as query parameters or JSON fields, never as path segments, so a
workflow id with a slash in it works too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from ..approvals import Decision
from ._access import CSRF_HEADER, LOOPBACK_NAMES, SESSION_COOKIE, Person, Right
from ._http import MAX_BODY as MAX_BODY
from ._http import SECURITY_HEADERS as SECURITY_HEADERS
from ._http import STATIC as STATIC
from ._http import Settings as Settings
from ._http import _error, _first_error, _ok, _Static
from ._inbox import Inbox, InboxError
from ._source import Waiting
from ._views import ask_view, closed_view, row_view


class Api:
    """The routes, around one :class:`Inbox`."""

    def __init__(self, inbox: Inbox, settings: Settings) -> None:
        self.inbox = inbox
        self.settings = settings
        self.access = settings.access
        self.stopping = asyncio.Event()

    # -- who and from where ---------------------------------------------------------------
    def _host_ok(self, request: Request) -> bool:
        host = (request.headers.get("host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:].split("]")[0]
        if name in LOOPBACK_NAMES:
            return True
        if self.settings.allowed_hosts:
            return name in self.settings.allowed_hosts
        # An open inbox answers only to loopback names; so does one a proxy signs people in to
        # (its header is a credential: after DNS rebinding, a page in a browser on this machine
        # could send it), unless the proxy's public names are given (--allowed-host).
        return not self.access.is_open and self.access.proxy is None

    def _person(self, request: Request) -> Person | None:
        return self.access.identify(
            authorization=request.headers.get("authorization"),
            cookie=request.cookies.get(SESSION_COOKIE),
            headers=request.headers,
            peer=request.client.host if request.client else None,
        )

    def _scheme(self, request: Request) -> str:
        """The scheme the browser used: the trusted proxy's ``X-Forwarded-Proto`` (it ends TLS
        in front of a plain-HTTP inbox), else the connection's own."""
        proxy = self.access.proxy
        peer = request.client.host if request.client else None
        if proxy is not None and proxy.trusts(peer):
            said = (request.headers.get("x-forwarded-proto") or "").split(",")[0].strip().lower()
            if said in ("http", "https"):
                return said
        return request.url.scheme

    def _post_problem(self, request: Request, person: Person | None) -> str | None:
        """Why a POST is refused as a possible cross-site request, or None."""
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return "send JSON (Content-Type: application/json)"
        origin = request.headers.get("origin")
        if (
            origin is not None
            and origin.rstrip("/") != f"{self._scheme(request)}://{request.headers.get('host', '')}"
        ):
            return f"cross-origin request from {origin} refused"
        if request.headers.get("sec-fetch-site") == "cross-site":
            return "cross-site request refused"
        if person is not None and not self.access.csrf_ok(person, request.headers.get(CSRF_HEADER)):
            return f"missing or wrong CSRF token: send the token from GET /api/me in {CSRF_HEADER}"
        return None

    async def _body(self, request: Request) -> dict[str, Any]:
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise InboxError(f"the request is over {MAX_BODY} bytes", 413)
        try:
            data = json.loads(raw or b"{}")
        except (ValueError, RecursionError) as e:
            raise InboxError(f"the body is not JSON: {str(e)[:200]}") from None
        if not isinstance(data, dict):
            raise InboxError("the body must be a JSON object")
        return data

    def endpoint(
        self, right: Right | None, *, post: bool = False
    ) -> Callable[
        [Callable[[Request, Person, dict[str, Any]], Awaitable[Response]]],
        Callable[[Request], Awaitable[Response]],
    ]:
        """Wrap a handler: host check, identity, right, CSRF for posts, errors as JSON."""

        def wrap(
            fn: Callable[[Request, Person, dict[str, Any]], Awaitable[Response]],
        ) -> Callable[[Request], Awaitable[Response]]:
            async def handle(request: Request) -> Response:
                if not self._host_ok(request):
                    return _error(
                        "unknown Host; open the inbox by its own address (or name it with --allowed-host)",
                        421,
                    )
                person = self._person(request)
                if post:
                    problem = self._post_problem(request, person)
                    if problem is not None:
                        return _error(problem, 403)
                if right is not None and person is None:
                    return _error("sign in first (POST /api/login with your token)", 401)
                if right is not None and person is not None and not person.may(right):
                    return _error(f"you may not do this; it needs the right {right!r}", 403)
                try:
                    body = await self._body(request) if post else {}
                    return await fn(request, person or Person(None, "see", "open"), body)
                except InboxError as e:
                    return _error(str(e), e.status)

            return handle

        return wrap

    # -- routes ---------------------------------------------------------------------------
    def routes(self) -> list[Any]:
        e = self.endpoint
        return [
            Route("/", self.page),
            Route("/api/me", e(None)(self.me)),
            Route("/api/login", e(None, post=True)(self.login), methods=["POST"]),
            Route("/api/logout", e(None, post=True)(self.logout), methods=["POST"]),
            Route("/api/asks", e("see")(self.asks)),
            Route("/api/ask", e("see")(self.ask)),
            Route("/api/events", e("see")(self.events)),
            Route("/api/preview", e("decide", post=True)(self.preview), methods=["POST"]),
            Route("/api/statement", e("decide", post=True)(self.statement), methods=["POST"]),
            Route("/api/decide", e("decide", post=True)(self.decide), methods=["POST"]),
            Mount("/static", _Static(directory=STATIC), name="static"),
        ]

    async def page(self, request: Request) -> Response:
        if not self._host_ok(request):
            return _error("unknown Host; open the inbox by its own address", 421)
        return FileResponse(f"{STATIC}/index.html", headers=SECURITY_HEADERS)

    async def me(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        real = self._person(request)
        if real is None:
            return _error("sign in first (POST /api/login with your token)", 401)
        return _ok(
            {
                "name": real.name,
                "right": real.right,
                "auth": real.via,
                "csrf": self.access.csrf_token(real),
                "ui_url": self.settings.ui_url,
            }
        )

    async def login(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        token = body.get("token")
        who = self.access.bearer(token) if isinstance(token, str) and token else None
        if who is None:
            return _error("unknown token", 401)
        cookie = self.access.session_cookie(who)
        signed_in = Person(who.name, who.right, "session", session=cookie)
        response = _ok(
            {"name": who.name, "right": who.right, "csrf": self.access.csrf_token(signed_in)}
        )
        response.set_cookie(
            SESSION_COOKIE,
            cookie,
            httponly=True,
            samesite="strict",
            secure=self.settings.secure_cookies,
            path="/",
        )
        return response

    async def logout(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        response = _ok({"signed_out": True})
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def asks(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        snap = await self.inbox.fresh()
        now = time.time()
        s = self.settings
        return _ok(
            {
                "version": snap.version,
                "now": now,
                "asks": [
                    ask_view(w, person, now=now, ui_url=s.ui_url, namespace=s.namespace)
                    for w in snap.asks
                ],
                "closed": [closed_view(c, person) for c in snap.closed],
                "problems": list(snap.problems) if person.may("read") else len(snap.problems),
            }
        )

    async def _find(self, workflow_id: Any, call_id: Any) -> Waiting:
        if (
            not isinstance(workflow_id, str)
            or not workflow_id
            or not isinstance(call_id, str)
            or not call_id
        ):
            raise InboxError("name the ask: workflow_id and call_id (strings)")
        return await self.inbox.find(workflow_id, call_id)

    async def ask(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        w = await self._find(
            request.query_params.get("workflow_id"), request.query_params.get("call_id")
        )
        s = self.settings
        view = ask_view(w, person, now=time.time(), ui_url=s.ui_url, namespace=s.namespace)
        view["verdicts"] = [row_view(r, person) for r in await self.inbox.verdicts(w)]
        return _ok(view)

    async def preview(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        w = await self._find(body.get("workflow_id"), body.get("call_id"))
        edits = body.get("edits")
        if not isinstance(edits, dict) or not edits:
            raise InboxError("edits must be a non-empty JSON object of argument: new value")
        return _ok((await self.inbox.preview(w, edits)).model_dump(mode="json"))

    async def statement(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        w = await self._find(body.get("workflow_id"), body.get("call_id"))
        kind = body.get("decision")
        if kind not in ("approve", "deny"):
            raise InboxError("decision must be 'approve' or 'deny'")
        approver = person.name or body.get("approver")
        if not isinstance(approver, str) or not approver.strip():
            raise InboxError("name the approver: the name your key is registered under")
        if person.name is not None and body.get("approver") not in (None, person.name):
            raise InboxError(
                f"you are signed in as {person.name}; you decide in your own name", 403
            )
        edits, reason, ttl = body.get("edits"), body.get("reason"), body.get("ttl_seconds", 3600)
        if edits is not None and not isinstance(edits, dict):
            raise InboxError("edits must be a JSON object of argument: new value")
        if reason is not None and not isinstance(reason, str):
            raise InboxError("reason must be a string")
        if not isinstance(ttl, int | float) or not 10 <= ttl <= 7 * 86400:
            raise InboxError("ttl_seconds must be a number between 10 and 604800")
        try:
            d = self.inbox.unsigned(
                w,
                decision=kind,
                approver=approver.strip(),
                edits=edits,
                reason=reason,
                ttl_seconds=ttl,
            )
        except ValidationError as err:
            raise InboxError(f"cannot build this decision: {_first_error(err)}") from None
        return _ok({"decision": d.model_dump(mode="json"), "statement": d.statement().decode()})

    async def decide(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        try:
            decision = Decision.model_validate(body.get("decision"))
        except ValidationError as err:
            raise InboxError(f"malformed decision: {_first_error(err)}") from None
        sent = body.get("statement")
        if sent is not None and sent != decision.statement().decode():
            raise InboxError(
                "the signed statement does not match the decision's fields; sign the statement "
                "POST /api/statement gave you, unchanged"
            )
        if person.name is not None and decision.approver != person.name:
            raise InboxError(
                f"you are signed in as {person.name}; you decide in your own name", 403
            )
        w = await self.inbox.find(decision.workflow_id, decision.call_id)
        check = await self.inbox.decide(w, decision, signal=bool(body.get("signal")))
        return _ok(
            {
                "accepted": check.ok,
                "reason": check.reason or None,
                "approver": decision.approver,
                "decision": decision.decision,
                "call_id": decision.call_id,
                "workflow_id": decision.workflow_id,
            }
        )

    async def events(self, request: Request, person: Person, body: dict[str, Any]) -> Response:
        return StreamingResponse(
            self._stream(request),
            media_type="text/event-stream",
            headers={**SECURITY_HEADERS, "X-Accel-Buffering": "no"},
        )

    async def _stream(self, request: Request) -> AsyncIterator[str]:
        async with self.inbox.watching():
            version = (await self.inbox.fresh()).version
            yield f"retry: 2000\nevent: version\ndata: {json.dumps({'version': version})}\n\n"
            last_beat = time.monotonic()
            while not self.stopping.is_set():
                snap = await self.inbox.changed_since(version, timeout=1.0)
                if await request.is_disconnected():
                    return
                if snap.version != version:
                    version = snap.version
                    yield f"event: version\ndata: {json.dumps({'version': version})}\n\n"
                elif time.monotonic() - last_beat > self.settings.heartbeat:
                    last_beat = time.monotonic()
                    yield ": keep-alive\n\n"


def build_app(inbox: Inbox, settings: Settings) -> Starlette:
    """The ASGI app over ``inbox``; its lifespan runs the poller."""
    api = Api(inbox, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        poller = asyncio.create_task(inbox.run(), name="duraguard-inbox-poller")
        try:
            yield
        finally:
            api.stopping.set()
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller

    app = Starlette(routes=api.routes(), lifespan=lifespan)
    app.state.api = api
    return app
