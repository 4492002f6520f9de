"""The real Temporal Web UI decodes through duraguard's codec endpoint (issue 24, class 4): in
headless Chromium, a run's encrypted input shows as its text when the endpoint takes the UI's
origin, and stays ciphertext when it does not, so the Host, Origin and content-type checks
let the UI's own calls (a preflight, then POST /decode with JSON) through and nothing else."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import re
import uuid

import pytest
from temporalio.client import Client
from temporalio.converter import DataConverter

from duraguard.codec import AesGcmCodec, CodecServer, new_key
from duraguard.server import DevServer
from tests._browser import Chromium
from tests._browser import chromium as _chromium

pytestmark = pytest.mark.timeout(150)

SECRET = "the secret is tangerine-42"
CIPHERTEXT = re.compile(r'Input\s*\n\s*"[A-Za-z0-9+/=]{40,}"')


def _input_shown(binary: str, url: str, decoded: bool) -> str:
    with Chromium(binary, window=(1400, 1000)) as browser:
        browser.goto(url)
        if decoded:
            return browser.wait_for_text(lambda t: SECRET in t, timeout=30)
        return browser.wait_for_text(lambda t: CIPHERTEXT.search(t) is not None, timeout=30)


async def test_the_web_ui_decodes_through_the_endpoint_only_from_its_own_origin() -> None:
    binary = _chromium()
    codec = AesGcmCodec([("k1", base64.b64decode(new_key()))])
    with CodecServer(codec, cors_origins=()) as endpoint:
        seen: list[str | None] = []
        allows = endpoint.origin_ok

        def origin_ok(origin: str | None) -> bool:
            seen.append(origin)
            return allows(origin)

        endpoint.origin_ok = origin_ok  # type: ignore[method-assign]
        async with DevServer(ui=True, codec_endpoint=endpoint.url) as server:
            assert server.ui_url is not None
            converter = dataclasses.replace(DataConverter.default, payload_codec=codec)
            client = await Client.connect(server.address, data_converter=converter)
            handle = await client.start_workflow(
                "NobodyRunsThis", SECRET, id=f"codec-ui-{uuid.uuid4().hex[:8]}", task_queue="none"
            )
            history = await handle.fetch_history()
            assert b"tangerine" not in history.to_json().encode()  # encrypted at rest
            page = f"{server.ui_url}/namespaces/default/workflows/{handle.id}"

            endpoint.cors_origins = (server.ui_url,)
            shown = await asyncio.to_thread(_input_shown, binary, page, True)
            assert SECRET in shown
            assert server.ui_url in seen  # the browser's calls came from the UI's page

            endpoint.cors_origins = ("http://localhost:1",)  # the UI's origin no longer allowed
            shown = await asyncio.to_thread(_input_shown, binary, page, False)
            assert SECRET not in shown
