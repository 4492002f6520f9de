"""The approver's inbox: every call waiting for a person, in a browser and over HTTP.

``duraguard inbox`` serves a page and a JSON API over a Temporal client. It lists the asks of
every run with ``DuraguardPending > 0`` (each run's pending query, or its history when no worker
answers), shows one with the run's verdicts so far, previews edits through the workflow's
``duraguard.preview-edits`` update, and forwards a person's signed decision by the
``duraguard.decide`` update, answering with the worker's verdict on it.

The private key never reaches the server: the server hands the page the exact statement of an
unsigned decision it built from the ask, the page signs those bytes with WebCrypto Ed25519 (the
key read from the person's own PEM file or kept, non-extractable, in the browser), and the
server checks the statement it gets back matches the decision's fields before forwarding it.

::

    app = create_app(client, access=Access.open(), ui_url="http://localhost:8233")
    async with InboxServer(app, port=8090) as server:
        print(server.url)

Needs the ``inbox`` extra: ``pip install 'duraguard[inbox]'`` (Starlette and uvicorn).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Sequence
from types import TracebackType
from typing import Any

try:
    import starlette  # noqa: F401
    import uvicorn
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        "duraguard.inbox needs Starlette and uvicorn: pip install 'duraguard[inbox]'"
    ) from err

from temporalio.client import Client

from ._access import RIGHTS, Access, Person, Right, is_loopback, new_token, token_digest
from ._app import Settings, build_app
from ._inbox import Inbox, InboxError


def create_app(
    client: Client,
    *,
    access: Access | None = None,
    ui_url: str | None = None,
    poll: float = 1.0,
    query_timeout: float = 2.0,
    update_timeout: float = 30.0,
    allowed_hosts: Sequence[str] = (),
    secure_cookies: bool = False,
) -> Any:
    """The inbox as an ASGI app (Starlette) over ``client``.

    Args:
        client: connected with the workers' data converter (pydantic, the codec if any).
        access: who may do what; :meth:`Access.open` (everyone decides) when omitted, which
            :class:`InboxServer` allows on loopback only.
        ui_url: the Temporal Web UI, for a link to each run.
        poll: seconds between refreshes while a page or stream watches.
        query_timeout: seconds to wait for a worker's answer before reading history.
        update_timeout: seconds to wait for a worker's answer to a decision or preview.
        allowed_hosts: Host names the inbox answers to besides the loopback ones.
        secure_cookies: mark the session cookie Secure (served over HTTPS).
    """
    inbox = Inbox(client, poll=poll, query_timeout=query_timeout, update_timeout=update_timeout)
    settings = Settings(
        access=access or Access.open(),
        ui_url=ui_url,
        namespace=client.namespace,
        allowed_hosts=tuple(h.lower() for h in allowed_hosts),
        secure_cookies=secure_cookies,
    )
    return build_app(inbox, settings)


class InboxServer:
    """Serves an inbox app with uvicorn in the running event loop.

    Args:
        app: from :func:`create_app`.
        host: the address to bind; anything but loopback needs an app with an access file.
        port: 0 picks a free one.
        ssl_certfile: a certificate to serve HTTPS (WebCrypto needs a secure context: loopback
            or HTTPS).
        ssl_keyfile: its key.

    Raises:
        InboxError: a non-loopback bind for an open inbox.
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_certfile: str | None = None,
        ssl_keyfile: str | None = None,
    ) -> None:
        access: Access = app.state.api.access
        if access.is_open and not is_loopback(host):
            raise InboxError(
                f"binding {host} would let other machines decide with no sign-in; bind "
                "127.0.0.1, or give an access file (people with tokens, or a trusted proxy)"
            )
        self.host = host
        self.https = ssl_certfile is not None
        self._config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
            ssl_certfile=ssl_certfile,
            ssl_keyfile=ssl_keyfile,
            # Never take the peer's address from X-Forwarded-For: the trusted-proxy check reads
            # the real peer (uvicorn's default trusts the header from loopback).
            proxy_headers=False,
        )
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.https else 'http'}://{host}:{self.port}"

    async def start(self) -> InboxServer:
        """Start serving; returns once the socket listens.

        Raises:
            InboxError: the server could not start (the port is taken, a bad certificate).
        """
        try:
            sock = _listen(self.host, self._config.port)
        except OSError as e:
            raise InboxError(
                f"the inbox cannot listen on {self.host}:{self._config.port}: {e.strerror}; "
                "pick another port"
            ) from None
        self.port = int(sock.getsockname()[1])
        self._server = server = uvicorn.Server(self._config)
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="duraguard-inbox")
        while not server.started:
            if self._task.done():
                sock.close()
                raise InboxError(f"the inbox did not start on {self.host}:{self.port}")
            await asyncio.sleep(0.02)
        return self

    async def stop(self) -> None:
        """Stop serving (open event streams end within a couple of seconds)."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._server = self._task = None

    async def wait(self) -> None:
        """Until the server stops (Ctrl-C, or :meth:`stop`)."""
        if self._task is not None:
            await self._task

    async def __aenter__(self) -> InboxServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket, bound here so a taken port is an error we can word."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


__all__ = [
    "RIGHTS",
    "Access",
    "Inbox",
    "InboxError",
    "InboxServer",
    "Person",
    "Right",
    "create_app",
    "is_loopback",
    "new_token",
    "token_digest",
]
