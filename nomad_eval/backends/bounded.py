"""Every HTTP answer a backend reads, read within bounds: at most `limit` bytes of body counted after
decompression, and JSON no deeper than base/bounded_json.py allows.

A server is outside the harness's control: an answer of hundreds of megabytes, a chunked body that never ends or a
small gzip body that inflates to gigabytes would otherwise be read whole into memory, and JSON nested a hundred
thousand deep ends in a RecursionError wherever it is parsed. The bound sits in the HTTP client, as event hooks
(httpx's public extension point), so a backend whose requests go through a library's client (the official Ollama
client) is bounded exactly as one that calls httpx itself.

The body is inflated here, chunk by chunk and never more than one piece past the limit, and handed on as plain
bytes: httpx's own decoder would inflate a whole network chunk at once, before any count could stop it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

from nomad_eval.backends.retry import Transient, retry_after
from nomad_eval.base.bounded_json import JsonRefused, loads_bounded
from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact_text

# The codings a bounded body may arrive in (asked for in every request): both inflate through zlib.
ACCEPTED = "gzip, deflate"
PIECE = 64 * 1024  # the most one step of inflating may produce, so a counted body overshoots by at most this


class ResponseTooLarge(NomadError):
    """A body past its limit: not read further. Said as what the server sent; the backend adds which server."""


class ClientHooks(TypedDict):
    """The keyword arguments of `httpx.Client(...)` that bound its answers."""

    event_hooks: dict[str, list[Callable[[Any], None]]]


def bounded_client(limit: int, setting: str) -> ClientHooks:
    """Keyword arguments for `httpx.Client(...)` (or a client built on one) that bound every answer it reads:
    `limit` bytes after decompression, `setting` naming the key that sets it in the message."""

    def ask(request: Any) -> None:
        request.headers["Accept-Encoding"] = ACCEPTED

    def read(response: Any) -> None:
        codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "deflate")):
            raise Transient(f"HTTP {response.status_code} with a body in Content-Encoding "
                            f"{response.headers['content-encoding']!r}, which was not asked for ({ACCEPTED})")
        try:
            body = b"".join(_pieces(response.stream, bool(codings), limit, setting))
        finally:
            response.stream.close()  # hands the connection back to the pool (the read is done, or refused)
        check_json(body, response.status_code)
        # The body is plain bytes now: the headers say so, or httpx would inflate it a second time.
        for name in ("content-encoding", "content-length"):
            if name in response.headers:
                del response.headers[name]
        import httpx

        response.stream = httpx.ByteStream(body)

    return ClientHooks(event_hooks={"request": [ask], "response": [read]})


def check_json(body: bytes, status: int) -> None:
    """Transient for a JSON body nested too deep to use; any other body is left to the caller's own parse (it
    names text that is not JSON in its own words)."""
    if body.lstrip()[:1] not in (b"{", b"["):
        return
    try:
        loads_bounded(body)
    except JsonRefused as exc:
        raise Transient(f"HTTP {status} with an unusable answer ({exc})") from None
    except ValueError:
        return


def _pieces(stream: Any, inflate: bool, limit: int, setting: str) -> Iterator[bytes]:
    """The body's bytes (inflated when `inflate`), stopped by ResponseTooLarge once they pass `limit`."""
    seen = 0
    step: Callable[[bytes], Iterator[bytes]] = _inflater() if inflate else (lambda raw: iter((raw,)))
    for raw in stream:
        for piece in step(raw):
            seen += len(piece)
            if seen > limit:
                raise ResponseTooLarge(f"a response body past {limit} bytes ({setting}); it was not read further")
            yield piece


def _inflater() -> Callable[[bytes], Iterator[bytes]]:
    """Inflates gzip or zlib data given in chunks, PIECE bytes of output at a time."""
    d = zlib.decompressobj(zlib.MAX_WBITS | 32)  # | 32: the gzip or zlib header, whichever it has

    def step(raw: bytes) -> Iterator[bytes]:
        data = raw
        while data:
            try:
                out = d.decompress(data, PIECE)
            except zlib.error as exc:
                raise Transient(f"a compressed body that does not inflate ({exc})") from None
            yield out
            data = d.unconsumed_tail

    return step


TRANSIENT_STATUS = (429, 500, 502, 503, 504)


def transient(response: Any) -> Transient | None:
    """A 429 or 5xx worth another try, carrying the wait the server asked for; None for any other status."""
    if response.status_code not in TRANSIENT_STATUS:
        return None
    return Transient(f"HTTP {response.status_code}", retry_after(response.headers.get("retry-after")))


def redirect(response: Any, setting: str) -> str | None:
    """What a 3xx answer is, for an error: a redirect is never followed (the harness calls the address it is
    given, and a body sent with a redirect is not the answer); None for any other status."""
    if not 300 <= response.status_code < 400:
        return None
    to = response.headers.get("location")
    where = f" to {redact_text(to)}" if to else ""
    return (f"answered HTTP {response.status_code}, a redirect{where}, which is not followed: set {setting} to "
            "the address that answers")
