"""A loopback HTTP server whose answers are scripted byte for byte: broken JSON, an HTML page, `{}`, a null
answer, or a valid answer sent one byte at a time. For the failure paths of the chat and embedding backends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.servers._http import running

# method, path -> (HTTP status, body bytes)
ReplyFn = Callable[[str, str], tuple[int, bytes]]


def raw_response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    head = (f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode() + body


@contextmanager
def serve(reply: ReplyFn, trickle: float = 0.0) -> Iterator[tuple[str, list[str]]]:
    """Yields (base URL, log of "METHOD path" requests). With `trickle` > 0 every byte of every response,
    status line and headers included, is sent `trickle` seconds after the one before."""
    log: list[str] = []
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            log.append(f"{self.command} {self.path}")
            status, body = reply(self.command, self.path)
            data = raw_response(status, body)
            if trickle <= 0:
                self.wfile.write(data)
                return
            for i in range(len(data)):
                if stop.wait(trickle):
                    return
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()

        do_GET = do_POST = _answer

    with running(Handler) as url:
        try:
            yield url, log
        finally:
            stop.set()


def openai_body(content: str | None) -> bytes:
    import json

    return json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()


def ollama_body(content: str | None) -> bytes:
    import json

    return json.dumps({"model": "m", "created_at": "2026-01-01T00:00:00Z",
                       "message": {"role": "assistant", "content": content}, "done": True,
                       "prompt_eval_count": 3, "eval_count": 1}).encode()


def model_list(kind: str) -> bytes:
    import json

    if kind == "openai":
        return json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
    return json.dumps({"models": [{"name": "m", "model": "m", "digest": "sha256-m-1"}]}).encode()


def elapsed(fn: Callable[[], Any]) -> tuple[float, BaseException | None]:
    """How long `fn` took, and what it raised."""
    t = time.perf_counter()
    try:
        fn()
    except BaseException as exc:  # the caller asserts on it
        return time.perf_counter() - t, exc
    return time.perf_counter() - t, None


# method, path, request headers -> (HTTP status, response headers, body pieces). Without a Content-Length header
# the body is sent chunked, piece by piece, for as long as the pieces last (an endless iterator: forever).
StreamFn = Callable[[str, str, Any], tuple[int, dict[str, str], Iterable[bytes]]]


@contextmanager
def serve_stream(reply: StreamFn) -> Iterator[tuple[str, list[str]]]:
    """Yields (base URL, log of "METHOD path" requests) of a server whose bodies may be huge, endless or
    compressed; it stops sending when the client hangs up."""
    log: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            log.append(f"{self.command} {self.path}")
            status, headers, pieces = reply(self.command, self.path, self.headers)
            chunked = "Content-Length" not in headers
            self.send_response(status)
            for k, v in {"Content-Type": "application/json", **headers}.items():
                self.send_header(k, v)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for piece in pieces:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what a bounded client does

        do_GET = do_POST = _answer

    with running(Handler) as url:
        yield url, log


def answer_of(kind: str, text_pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The backend's answer shape with its text given in pieces (so it may be huge or endless)."""
    head, tail = {"openai": (b'{"choices": [{"message": {"role": "assistant", "content": "', b'"}}]}'),
                  "ollama": (b'{"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": true, '
                             b'"message": {"role": "assistant", "content": "', b'"}}'),
                  "embed": (b'{"model": "m", "embeddings": [[0.5, "', b'"]]}'),
                  "app": (b'{"answer": "', b'", "contexts": []}')}[kind]
    yield head
    yield from text_pieces
    yield tail


def gzipped(pieces: Iterable[bytes]) -> bytes:
    """The pieces as one gzip body: a repeated text of a gigabyte compresses to about a megabyte (a gzip bomb)."""
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([*(z.compress(p) for p in pieces), z.flush()])


def repeated(total: int, piece: int = 1 << 20) -> Iterator[bytes]:
    """`total` bytes of "a" in pieces of `piece` bytes (never all in memory at once)."""
    block = b"a" * piece
    for _ in range(total // piece):
        yield block
    yield b"a" * (total % piece)


def endless(piece: int = 1 << 16) -> Iterator[bytes]:
    block = b"a" * piece
    while True:
        yield block
