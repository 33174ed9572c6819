"""Server answers are read within bounds (issue 44, deliver 4): a body past its backend's max_response_bytes,
counted after decompression (a huge answer, an endless chunked body, a gzip bomb), and JSON nested past the
shared depth limit are named failures of every HTTP backend, never a traceback or a process that fills memory."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import pytest

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.http_app import HttpApp
from nomad_eval.base.bounded_json import MAX_JSON_DEPTH
from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build, option
from nomad_eval.run.app_checks import request_settings
from tests.backends.test_server_answers import bounded
from tests.servers.misbehaving import answer_of, endless, gzipped, model_list, repeated, serve_stream

HI = [{"role": "user", "content": "hi"}]
KINDS = ["openai", "ollama", "embed", "app"]
LIMIT = 1 << 20  # 1 MiB here, so each case is quick; the shipped defaults are a few MiB
SETTING = {"openai": "model.max_response_bytes", "ollama": "model.max_response_bytes",
           "embed": "embedder.max_response_bytes", "app": "app.max_response_bytes"}


def _app(url: str, **kw: Any) -> HttpApp:
    settings = request_settings(option("app", "http")) | {"url": f"{url}/ask"}
    app = HttpApp(**(settings | {"retries": 2, "timeout": 10, "deadline": 30} | kw))
    app.open()
    return app


def ask(kind: str, url: str, limit: int = LIMIT) -> Any:
    """One request of the backend `kind` against `url`, answered by its parsed result."""
    if kind == "openai":
        return build("model", "openai", name="m", base_url=f"{url}/v1", retries=2,
                     max_response_bytes=limit).chat(HI, ChatOptions()).text
    if kind == "ollama":
        return build("model", "ollama", name="m", base_url=url, warmup=False, evict_others=False, retries=2,
                     max_response_bytes=limit).chat(HI, ChatOptions()).text
    if kind == "embed":
        return build("embedder", "ollama", name="m", dim=2, base_url=url, retries=2,
                     max_response_bytes=limit).embed(["x"])
    app = _app(url, max_response_bytes=limit)
    return app.parse(app.send(app.request("g1", "hi", []))[0], None, "g1").answer


def body_server(kind: str, body: Iterable[bytes] | None = None, headers: dict[str, str] | None = None) -> Any:
    """A server answering the model list, and every other request with `body` (a fresh iterable per request)."""
    def reply(method: str, path: str, _: Any) -> tuple[int, dict[str, str], Iterable[bytes]]:
        if method == "GET":
            return 200, {}, [model_list("openai" if kind == "openai" else "ollama")]
        assert body is not None
        return 200, dict(headers or {}), body() if callable(body) else body

    return serve_stream(reply)


def _gzip_bomb(kind: str) -> Any:
    bomb = gzipped(answer_of(kind, repeated(64 * LIMIT)))
    assert len(bomb) < LIMIT // 4  # a small body on the wire: only the inflated size is past the limit
    return lambda: [bomb]


SHAPES = {
    "huge": lambda kind: lambda: answer_of(kind, repeated(20 * LIMIT)),
    "endless-chunked": lambda kind: lambda: answer_of(kind, endless()),
    "gzip-bomb": _gzip_bomb,
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_body_past_the_limit_is_a_named_failure(kind: str, shape: str) -> None:
    headers = {"Content-Encoding": "gzip"} if shape == "gzip-bomb" else {}
    with body_server(kind, SHAPES[shape](kind), headers) as (url, log):
        took, exc = bounded(lambda: ask(kind, url))
    assert isinstance(exc, NomadError) and not isinstance(exc.__cause__, BaseException), repr(exc)
    msg = str(exc)
    assert f"past {LIMIT} bytes ({SETTING[kind]})" in msg and url[7:] in msg, msg
    assert sum(line.startswith("POST") for line in log) == 1  # not retried: the same server sends the same
    assert took < 10, took


@pytest.mark.parametrize("kind", KINDS)
def test_a_gzip_answer_within_the_limit_is_read(kind: str) -> None:
    body = gzipped(answer_of(kind, [b"7"] if kind == "embed" else [b"fine"]))
    with body_server(kind, lambda: [body], {"Content-Encoding": "gzip"}) as (url, _):
        if kind == "embed":
            assert ask(kind, url).tolist() == [[0.5, 7.0]]  # the client reads the text "7" as a number
        else:
            assert ask(kind, url) == "fine"


@pytest.mark.parametrize("kind", KINDS)
def test_json_nested_past_the_depth_limit_is_a_named_failure(kind: str) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with body_server(kind, lambda: [deep]) as (url, log):
        _, exc = bounded(lambda: ask(kind, url, limit=8 * LIMIT))
    assert isinstance(exc, NomadError), repr(exc)  # not a RecursionError
    assert f"JSON nested deeper than {MAX_JSON_DEPTH} levels" in str(exc) and url[7:] in str(exc), str(exc)
    assert "kept failing after 2 tries" in str(exc)


@pytest.mark.parametrize("kind", ["openai", "app"])
def test_a_redirect_with_a_json_body_is_not_the_answer(kind: str) -> None:
    def reply(method: str, path: str, _: Any) -> tuple[int, dict[str, str], Iterable[bytes]]:
        if method == "GET":
            return 200, {}, [model_list("openai")]
        return 302, {"Location": "http://elsewhere.example/ask?token=tok-MOVED-1"}, list(answer_of(kind, [b"no"]))

    with serve_stream(reply) as (url, _):
        _, exc = bounded(lambda: ask(kind, url))
    assert isinstance(exc, NomadError), repr(exc)
    msg = str(exc)
    assert "HTTP 302, a redirect to http://elsewhere.example/ask?token=<redacted>, which is not followed" in msg
    assert "tok-MOVED" not in msg


def test_retry_after_is_waited_within_the_deadline() -> None:
    sent: list[float] = []

    def reply(method: str, path: str, _: Any) -> tuple[int, dict[str, str], Iterable[bytes]]:
        sent.append(time.monotonic())
        if len(sent) == 1:
            return 429, {"Retry-After": "2"}, [b"{}"]
        return 200, {}, list(answer_of("app", [b"fine"]))

    with serve_stream(reply) as (url, _):
        assert ask("app", url) == "fine"
    assert 2.0 <= sent[1] - sent[0] < 4.0, sent  # the default backoff alone would have waited 0.5 s

    sent.clear()
    with serve_stream(lambda m, p, h: (sent.append(time.monotonic()), (429, {"Retry-After": "3600"}, [b"{}"]))[1]
                      ) as (url, _):
        app = _app(url, deadline=2.0, retries=3)
        took, exc = bounded(lambda: app.send(app.request("g1", "hi", [])))
    assert isinstance(exc, NomadError) and "app.deadline of 2 s passed" in str(exc), repr(exc)
    assert took < 3.5, took  # an hour asked for, the deadline kept
