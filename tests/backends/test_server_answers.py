"""Servers that misbehave get named errors (issue 32, cases 7, 8 and 9): a malformed answer is retried within
the bounded budget and then named with its server and status; model.timeout is a wall-clock deadline for one
request; a null or empty answer is never cached, and an unreadable cached row is asked again."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.backends.chat import ChatOptions, ChatResult
from nomad_eval.backends.response_cache import CachedChat, ResponseCache
from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI
from tests.servers.misbehaving import elapsed, model_list, ollama_body, openai_body, serve

HI = [{"role": "user", "content": "hi"}]
KINDS = ["openai", "ollama"]
MALFORMED = {"broken-json": b'{"choices": [{"message": {"content": "fi',
             "html-page": b"<html><body><h1>502 Bad Gateway</h1></body></html>",
             "empty-object": b"{}"}


def model(kind: str, url: str, **settings: Any) -> Any:
    if kind == "openai":
        return build("model", "openai", name="m", base_url=f"{url}/v1", **settings)
    return build("model", "ollama", name="m", base_url=url, warmup=False, evict_others=False, **settings)


def answer(kind: str, content: str | None) -> bytes:
    return openai_body(content) if kind == "openai" else ollama_body(content)


def bounded(fn: Callable[[], Any], limit: float = 20.0) -> tuple[float, BaseException | None]:
    """`elapsed(fn)` on a daemon thread, so a test of a deadline that does not hold fails instead of hanging."""
    box: list[tuple[float, BaseException | None]] = []
    worker = threading.Thread(target=lambda: box.append(elapsed(fn)), daemon=True)
    worker.start()
    worker.join(limit)
    assert box, f"still waiting after {limit} s"
    return box[0]


# Case 7: malformed answers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_answer_is_retried_then_named_with_server_and_status(kind: str, body: bytes) -> None:
    def reply(method: str, path: str) -> tuple[int, bytes]:
        return (200, model_list(kind)) if method == "GET" else (200, body)

    with serve(reply) as (url, log):
        _, exc = bounded(lambda: model(kind, url, retries=2).chat(HI, ChatOptions()))
    assert isinstance(exc, NomadError), repr(exc)  # not a JSONDecodeError, KeyError or ValidationError
    msg = str(exc)
    assert "kept failing after 2 tries" in msg and ("HTTP 200" in msg or "HTTP 2xx" in msg)
    assert "malformed" in msg or "not JSON" in msg
    assert url.removeprefix("http://") in msg, msg  # the server is named
    assert sum(line.startswith("POST") for line in log) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_answer_then_a_good_one_is_answered(kind: str) -> None:
    sent = {"n": 0}

    def reply(method: str, path: str) -> tuple[int, bytes]:
        if method == "GET":
            return 200, model_list(kind)
        sent["n"] += 1
        return (200, b"<html>busy</html>") if sent["n"] == 1 else (200, answer(kind, "fine"))

    with serve(reply) as (url, _):
        assert model(kind, url, retries=3).chat(HI, ChatOptions()).text == "fine"
    assert sent["n"] == 2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("body", [b"<html>login</html>", b'{"data": 5, "models": 5}', b'{"data": [{"x": 1}], '
                                  b'"models": [{"model": 3}]}'])
def test_malformed_model_list_in_preflight_is_named(kind: str, body: bytes) -> None:
    with serve(lambda method, path: (200, body)) as (url, log):
        _, exc = bounded(lambda: model(kind, url, retries=2).preflight())
    assert isinstance(exc, NomadError), repr(exc)
    assert "kept failing after 2 tries" in str(exc) and "HTTP 2" in str(exc) and url[7:] in str(exc)
    assert len(log) == 2


def test_run_against_a_malformed_server_records_the_failure(make_cfg: Callable[..., DictConfig],
                                                             tmp_path: Path) -> None:
    def reply(method: str, path: str) -> tuple[int, bytes]:
        return (200, model_list("openai")) if method == "GET" else (200, b"{}")

    with serve(reply) as (url, _):
        cfg = make_cfg(*MINI, "tier=generation", "model=openai", "model.name=m", f"model.base_url={url}/v1",
                       "model.retries=2", "mode=noretrieval", "repeats=1", "cache=false")
        with pytest.raises(SystemExit) as stop:
            run_tier(cfg)
    assert stop.value.code == 2
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["status"] == "failed"
    assert "HTTP 200 with a malformed answer" in report["error"] and url[7:] in report["error"]


# Case 8: model.timeout is a deadline ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_server_sending_one_byte_a_second_fails_at_the_timeout(kind: str) -> None:
    def reply(method: str, path: str) -> tuple[int, bytes]:
        return (200, model_list(kind)) if method == "GET" else (200, answer(kind, "a valid answer"))

    with serve(reply, trickle=1.0) as (url, _):
        took, exc = bounded(lambda: model(kind, url, timeout=2, retries=1).chat(HI, ChatOptions()))
    assert isinstance(exc, NomadError) and "did not answer within 2" in str(exc), repr(exc)
    assert 2.0 <= took <= 3.0, took  # model.timeout plus at most one second


# Case 9: null answers are not cached ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("empty", [None, "", "  \n"])
def test_null_answer_is_not_cached_and_the_recovered_server_answers(kind: str, empty: str | None,
                                                                     tmp_path: Path) -> None:
    sent = {"n": 0}

    def reply(method: str, path: str) -> tuple[int, bytes]:
        if method == "GET":
            return 200, model_list(kind)
        sent["n"] += 1
        return 200, answer(kind, empty if sent["n"] == 1 else "the real answer")

    cache = ResponseCache(tmp_path / "responses.sqlite")
    with serve(reply) as (url, _):
        chat = CachedChat(model(kind, url), cache)
        assert chat.chat(HI, ChatOptions(), repeat=0).text.strip() == ""
        assert chat.chat(HI, ChatOptions(), repeat=0).text == "the real answer"  # asked again, not served ""
        assert chat.chat(HI, ChatOptions(), repeat=0).text == "the real answer"
    assert (sent["n"], chat.calls, chat.hits) == (2, 2, 1)
    cache.close()


ROWS = {"not-json": "not json", "no-text": '{"prompt_tokens": 3}', "text-not-string": '{"text": 5}',
        "a-list": "[1, 2]", "bad-logprobs": '{"text": "x", "logprobs": [[1]]}', "empty-text": '{"text": ""}'}


@pytest.mark.parametrize("body", [*ROWS.values(), b"\xff\xfe\x00binary"], ids=[*ROWS, "invalid-utf8"])
def test_unreadable_cached_row_is_asked_again_and_refilled(tmp_path: Path, body: str | bytes) -> None:
    path = tmp_path / "responses.sqlite"
    ResponseCache(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO resp VALUES (?, ?)", ("k", body))
    db.commit()
    db.close()
    cache = ResponseCache(path)
    assert cache.get("k") is None
    cache.put("k", ChatResult("refilled", 1, 1))
    assert cache.get("k") == ChatResult("refilled", 1, 1)
    cache.close()
