"""Several instances of one inbox behind one address (a load balancer without sticky sessions):
with the same ``DURAGUARD_INBOX_SECRET`` a browser session and its CSRF token made by one
instance are accepted by the others; without it each instance has a key of its own, and a
request that lands on another instance is asked to sign in again (never let through)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2 as httpx
import pytest

from duraguard.errors import ConfigurationError
from duraguard.inbox import Access, InboxServer, create_app, token_digest
from duraguard.inbox._access import SECRET_ENV, SESSION_COOKIE, shared_secret

TOKEN = "alice-token-0123456789abcdef"
PEOPLE = {"people": {"alice": {"token_sha256": token_digest(TOKEN), "rights": "decide"}}}


@asynccontextmanager
async def _instances(client: Any, n: int) -> AsyncIterator[list[str]]:
    servers = [
        await InboxServer(create_app(client, access=Access.from_mapping(PEOPLE))).start()
        for _ in range(n)
    ]
    try:
        yield [s.url for s in servers]
    finally:
        for s in servers:
            await s.stop()


async def _signed_in_on(url: str) -> tuple[str, str]:
    """A session cookie and its CSRF token, from the instance at ``url``."""
    async with httpx.AsyncClient(base_url=url) as c:
        r = await c.post("/api/login", json={"token": TOKEN})
        assert r.status_code == 200
        me = (await c.get("/api/me")).json()
        return c.cookies[SESSION_COOKIE], me["csrf"]


async def _preview(url: str, cookie: str, csrf: str) -> int:
    async with httpx.AsyncClient(base_url=url) as c:
        c.cookies.set(SESSION_COOKIE, cookie)
        body = {"workflow_id": "nothing-waits", "call_id": "c1", "edits": {"a": 1}}
        r = await c.post("/api/preview", json=body, headers={"X-CSRF-Token": csrf})
        return r.status_code


async def test_instances_sharing_the_secret_accept_each_others_sessions(
    temporal_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, "s3cret-shared-by-every-instance-0123456789")
    async with _instances(temporal_env.client, 3) as urls:
        cookie, csrf = await _signed_in_on(urls[0])
        for url in urls:
            # past sign-in and CSRF on every instance: nothing called that waits
            assert await _preview(url, cookie, csrf) == 404


async def test_instances_each_with_a_key_of_their_own_ask_to_sign_in_again(
    temporal_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    async with _instances(temporal_env.client, 2) as (first, second):
        cookie, csrf = await _signed_in_on(first)
        assert await _preview(first, cookie, csrf) == 404
        assert await _preview(second, cookie, csrf) == 401


def test_a_short_shared_secret_is_refused_with_how_to_make_one() -> None:
    with pytest.raises(ConfigurationError, match="32 or more"):
        shared_secret({SECRET_ENV: "short"})
    assert shared_secret({SECRET_ENV: "x" * 40}) == shared_secret({SECRET_ENV: "x" * 40})
    assert shared_secret({}) != shared_secret({})
