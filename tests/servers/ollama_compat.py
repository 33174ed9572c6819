"""A small Ollama-API-compatible server on loopback, answering with real embedded models.

It lets the official `ollama` client's requests and responses be exercised for real where no Ollama
server can be installed. Only the endpoints the harness uses are served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EmbedFn = Callable[[list[str]], list[list[float]]]


def _handler(models: dict[str, EmbedFn]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/api/tags":
                self._send(200, {"models": [{"name": m, "model": m} for m in models]})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/api/embed":
                name = body.get("model")
                if name not in models:
                    self._send(404, {"error": f"model '{name}' not found"})
                    return
                inputs = body.get("input")
                texts = [inputs] if isinstance(inputs, str) else list(inputs)
                self._send(200, {"model": name, "embeddings": models[name](texts)})
            else:
                self._send(404, {"error": "not found"})

    return Handler


@contextmanager
def serve(models: dict[str, EmbedFn]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(models))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
