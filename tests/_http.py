"""A JSON endpoint on 127.0.0.1 for tests: each POST's body is handed to a function, whose
answer is sent back (a fake OpenAI-compatible server, a scripted model behind one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[BaseHTTPRequestHandler, Any], tuple[int, Any, dict[str, str]]]
"""``(request, decoded body) -> (status, body, headers)``; a body that is bytes goes as is."""


@contextmanager
def serve_json(answer: Answer) -> Iterator[str]:
    """Serve ``answer`` on a free port for the block of a ``with``; yields ``http://host:port``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            status, body, headers = answer(self, json.loads(self.rfile.read(length)))
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
