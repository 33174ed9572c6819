"""Fuzzed server answers (status and body) for every response the backends read, over real HTTP on loopback:
each call either returns a usable result or raises NomadError naming the server; never another exception.

The counts are printed at the end of the session (tests/fuzz_support.py); NOMAD_FUZZ_SCALE multiplies them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nomad_eval.backends.chat import ChatOptions, ChatResult
from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from tests.fuzz_support import fuzz_settings, run, tried
from tests.servers.misbehaving import model_list, ollama_body, openai_body, serve

STATUS = st.sampled_from([200] * 8 + [201, 204, 301, 400, 401, 404, 413, 418, 429, 500, 502, 503])
TEXT = st.text(max_size=8) | st.sampled_from(["", "\x00", "\ud800", "<|im_end|>"])
SCALAR = st.none() | st.booleans() | st.integers(-2, 2**40) | st.floats() | TEXT
JSON = st.recursive(SCALAR, lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3), max_leaves=8)
TOKEN = st.fixed_dictionaries({}, optional={"token": TEXT | JSON, "logprob": st.floats() | JSON,
                                             "top_logprobs": st.lists(JSON, max_size=2) | JSON})
MESSAGE = st.fixed_dictionaries({}, optional={"role": st.just("assistant") | JSON, "content": TEXT | JSON})
OPENAI = st.fixed_dictionaries({}, optional={
    "choices": st.lists(st.fixed_dictionaries({}, optional={
        "message": MESSAGE | JSON, "logprobs": st.fixed_dictionaries({"content": st.lists(TOKEN, max_size=2)}) | JSON,
    }), max_size=2) | JSON,
    "usage": st.fixed_dictionaries({}, optional={"prompt_tokens": SCALAR, "completion_tokens": SCALAR}) | JSON,
    "data": st.lists(st.fixed_dictionaries({}, optional={"id": st.just("m") | JSON}), max_size=2) | JSON,
})
OLLAMA = st.fixed_dictionaries({}, optional={
    "message": MESSAGE | JSON, "done": st.booleans() | JSON, "prompt_eval_count": SCALAR, "eval_count": SCALAR,
    "logprobs": st.lists(TOKEN, max_size=2) | JSON, "created_at": st.just("2026-01-01T00:00:00Z") | JSON,
    "models": st.lists(st.fixed_dictionaries({}, optional={"model": st.just("m") | JSON,
                                                           "digest": TEXT | JSON}), max_size=2) | JSON,
    "embeddings": st.lists(st.lists(st.floats(width=32) | JSON, max_size=4), max_size=3) | JSON,
})
VALID = [openai_body("fine"), ollama_body("fine"), model_list("openai"), model_list("ollama"),
         json.dumps({"model": "m", "embeddings": [[0.5, 0.5, 0.5, 0.5]]}).encode()]


def bodies(shape: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    valid = st.sampled_from(VALID)
    return (shape.map(lambda d: json.dumps(d).encode("utf-8", "surrogatepass"))
            | JSON.map(lambda d: json.dumps(d).encode("utf-8", "surrogatepass"))
            | st.tuples(valid, st.integers(0, 400)).map(lambda vn: vn[0][: vn[1]])  # cut anywhere
            | valid | st.binary(max_size=64)
            | st.sampled_from([b"<html><body>502 Bad Gateway</body></html>", b"null", b"[]", b"{}", b"NaN"]))


@pytest.fixture(scope="module")
def answers() -> Iterator[tuple[str, dict[str, Any]]]:
    """A server answering whatever the example put in `next` (the same answer to every request)."""
    nxt: dict[str, Any] = {"status": 200, "body": b"{}"}
    with serve(lambda method, path: (nxt["status"], nxt["body"])) as (url, _):
        yield url, nxt


def _fuzz(name: str, answers: tuple[str, dict[str, Any]], shape: st.SearchStrategy[Any],
          call: Callable[[str], Any], check: Callable[[Any], None]) -> int:
    url, nxt = answers

    @fuzz_settings(200)
    @given(STATUS, bodies(shape))
    def prop(status: int, body: bytes) -> None:
        tried(name)
        nxt["status"], nxt["body"] = status, body
        try:
            result = call(url)
        except NomadError as exc:
            assert url[7:] in str(exc), str(exc)  # the server is named
            return
        check(result)

    return run(name, prop)


def _chat_result(result: Any) -> None:
    assert isinstance(result, ChatResult) and isinstance(result.text, str)
    assert all(n is None or isinstance(n, int) for n in (result.prompt_tokens, result.completion_tokens))


HI = [{"role": "user", "content": "hi"}]


def test_fuzzed_openai_chat_answers(answers: tuple[str, dict[str, Any]]) -> None:
    m = build("model", "openai", name="m", base_url=f"{answers[0]}/v1", retries=1, timeout=5)
    assert _fuzz("openai chat answer", answers, OPENAI, lambda url: m.chat(HI, ChatOptions(top_logprobs=2)),
                 _chat_result) >= 200


def test_fuzzed_openai_model_lists(answers: tuple[str, dict[str, Any]]) -> None:
    m = build("model", "openai", name="m", base_url=f"{answers[0]}/v1", retries=1, timeout=5)
    assert _fuzz("openai model list", answers, OPENAI, lambda url: m.preflight(),
                 lambda r: None) >= 200


def test_fuzzed_ollama_chat_answers(answers: tuple[str, dict[str, Any]]) -> None:
    m = build("model", "ollama", name="m", base_url=answers[0], warmup=False, evict_others=False, retries=1,
              timeout=5)
    assert _fuzz("ollama chat answer", answers, OLLAMA, lambda url: m.chat(HI, ChatOptions(top_logprobs=2)),
                 _chat_result) >= 200


@pytest.mark.slow  # a new client per example (one reads a digest once); malformed lists stay in the quick lane
def test_fuzzed_ollama_model_lists(answers: tuple[str, dict[str, Any]]) -> None:
    def preflight_and_digest(url: str) -> Any:
        m = build("model", "ollama", name="m", base_url=url, warmup=False, evict_others=False, retries=1,
                  timeout=5)
        m.preflight()
        return m.identity()

    assert _fuzz("ollama model list and digest", answers, OLLAMA, preflight_and_digest,
                 lambda ident: isinstance(ident["digest"], str) or pytest.fail(repr(ident))) >= 200


def test_fuzzed_ollama_embeddings(answers: tuple[str, dict[str, Any]]) -> None:
    emb = build("embedder", "ollama", name="m", dim=4, base_url=answers[0], retries=1, timeout=5)

    def vectors(v: Any) -> None:
        assert isinstance(v, np.ndarray) and v.shape == (1, 4) and v.dtype == np.float32

    assert _fuzz("ollama embeddings", answers, OLLAMA, lambda url: emb.embed(["x"]), vectors) >= 200
