"""The HTTP app backend: the body template, paths into the response, and each way a response can be unusable,
against a real server on loopback."""

from __future__ import annotations

import time
from typing import Any

import pytest

from nomad_eval.backends.http_app import HttpApp, at_path, render
from nomad_eval.base.errors import NomadError
from tests.servers._http import JsonHandler, running

HISTORY = [{"role": "user", "content": "I have an Osprey L9."}, {"role": "assistant", "content": "Four AA cells."}]


def _app(url: str, **kw: Any) -> HttpApp:
    settings: dict[str, Any] = {
        "name": "t", "url": url, "method": "POST", "headers": {}, "headers_env": {},
        "body": {"q": "{query}"}, "answer_path": "answer", "contexts_path": "contexts", "context_doc_id": "doc_id",
        "context_text": "text", "prompt_tokens_path": None, "completion_tokens_path": None, "timeout": 5.0,
        "connect_timeout": 2.0, "deadline": 30.0, "retries": 2, "concurrency": 1,
        "max_response_bytes": 1 << 20}
    return HttpApp(**(settings | kw))


def test_the_body_template_takes_the_query_the_id_and_the_history() -> None:
    template = {"question": "Q: {query} ({id})", "history": "{history}", "messages": "{messages}",
                "context": "before:\n{history}", "n": 3, "flags": [True, "{id}"]}
    body = render(template, "How long on high?", HISTORY, "mini-07")
    assert body == {"question": "Q: How long on high? (mini-07)", "history": HISTORY,
                    "messages": [*HISTORY, {"role": "user", "content": "How long on high?"}],
                    "context": "before:\nuser: I have an Osprey L9.\nassistant: Four AA cells.", "n": 3,
                    "flags": [True, "mini-07"]}


def test_paths_follow_keys_and_list_indexes() -> None:
    data = {"choices": [{"message": {"content": "hi"}}], "a": {"b": None}}
    assert at_path(data, "choices.0.message.content") == "hi"
    assert at_path(data, "choices.-1.message.content") == "hi"
    assert at_path(data, "a.b") is None
    with pytest.raises(KeyError, match="1"):
        at_path(data, "choices.1.message")
    with pytest.raises(KeyError, match="missing"):
        at_path(data, "a.missing")


def test_a_response_is_parsed_or_named_as_unusable() -> None:
    app = _app("http://unused")
    reply = app.parse({"answer": "It is 3 hours.", "contexts": [{"doc_id": "lantern", "text": "3 hours"}, "bare"]},
                      12.0, "g1")
    assert reply.answer == "It is 3 hours." and reply.contexts == [("lantern", "3 hours"), (None, "bare")]
    assert app.parse({"answer": "x", "contexts": None}, None, "g1").contexts == []  # retrieved nothing
    with pytest.raises(NomadError, match=r"golden g1 has no answer at app.answer_path='answer' \(no 'answer'\)"):
        app.parse({"reply": "x"}, None, "g1")
    with pytest.raises(NomadError, match="golden g1 .* is dict, not text"):
        app.parse({"answer": {"text": "x"}, "contexts": []}, None, "g1")
    with pytest.raises(NomadError, match="contexts for golden g1 .* are str, not a list"):
        app.parse({"answer": "x", "contexts": "lantern"}, None, "g1")
    with pytest.raises(NomadError, match="neither app.context_doc_id"):
        app.parse({"answer": "x", "contexts": [{"id": 1}]}, None, "g1")


def test_http_failures_are_named_retried_or_stopped_by_the_deadline() -> None:
    calls: list[str] = []

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            q = self._body()["q"]
            calls.append(q)
            if q == "html":
                data = b"<html>oops</html>"
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif q == "bad":
                self._send(422, {"detail": "query too long"})
            elif q == "busy":
                self._send(503, {"error": "busy"})
            elif q == "slow":
                time.sleep(1.5)
                self._send(200, {"answer": "late"})
            else:
                self._send(200, {"answer": q})

    with running(Handler) as url:
        app = _app(url, retries=3, deadline=30.0)
        app.open()
        try:
            assert app.send(app.request("g", "fine", []))[0] == {"answer": "fine"}
            with pytest.raises(NomadError, match=r"golden g\) answered HTTP 200 with a body that is not JSON"):
                app.send(app.request("g", "html", []))
            with pytest.raises(NomadError, match="refused the request: HTTP 422"):
                app.send(app.request("g", "bad", []))
            with pytest.raises(NomadError, match="kept failing after 3 tries: HTTP 503"):
                app.send(app.request("g", "busy", []))
            assert calls.count("busy") == 3
            app.deadline = 1.0
            app.open()  # the deadline starts again
            t = time.monotonic()
            with pytest.raises(NomadError, match="app.deadline of 1 s passed"):
                app.send(app.request("g", "slow", []))
            assert time.monotonic() - t < 1.5
        finally:
            app.close()


def test_an_app_that_is_down_is_named_and_an_unset_secret_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app("http://127.0.0.1:9/ask")  # the discard port: nothing listens
    app.open()
    with pytest.raises(NomadError, match=r"the app at http://127.0.0.1:9/ask \(golden g\) is unreachable"):
        app.send(app.request("g", "q", []))
    app.close()
    monkeypatch.delenv("NO_SUCH_TOKEN_VAR", raising=False)
    with pytest.raises(NomadError, match="NO_SUCH_TOKEN_VAR, which are not set") as exc:
        _app("http://unused", headers_env={"Authorization": "NO_SUCH_TOKEN_VAR"}).open()
    assert exc.value.exit_code == 2


@pytest.mark.parametrize("header", ["Authorization", "X-Api-Key", "Cookie", "X-Auth-Token"])
def test_a_credential_in_the_plain_headers_is_refused(header: str) -> None:
    with pytest.raises(NomadError, match=f"app.headers names {header}, which carry credentials") as exc:
        _app("http://unused", headers={header: "abc", "X-Client": "eval"})
    assert exc.value.exit_code == 2


def test_app_timeout_is_a_deadline_and_a_password_in_its_url_is_never_shown() -> None:
    class Trickle(JsonHandler):
        def do_POST(self) -> None:
            self._body()
            data = b'{"answer": "eventually"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for byte in data:  # one byte a second: each read is quick, the answer never is
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(1.0)

    with running(Trickle) as url:
        app = _app(url.replace("http://", "http://user:pw-MARK@"), timeout=2.0, retries=1)
        app.open()
        t = time.monotonic()
        try:
            with pytest.raises(NomadError, match=r"did not answer within 2 s") as err:
                app.send(app.request("g", "q", []))
        finally:
            app.close()
        assert time.monotonic() - t < 3.0
        assert "pw-MARK" not in str(err.value)


def test_an_app_echoing_its_secret_headers_has_them_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44: a 401 (or any error body) quoting the headers it was sent shows neither the bearer token nor a
    bare key; both came from the environment through headers_env."""
    monkeypatch.setenv("APP_TOKEN_T", "Bearer tok-ECHOED-7f3a")
    monkeypatch.setenv("APP_KEY_T", "key-ECHOED-91bc")

    class Echo(JsonHandler):
        def do_POST(self) -> None:
            self._body()
            self._send(401, {"error": f"bad credentials {self.headers['Authorization']} / "
                                      f"{self.headers['X-Api-Key']}"})

    with running(Echo) as url:
        app = _app(url, headers_env={"Authorization": "APP_TOKEN_T", "X-Api-Key": "APP_KEY_T"})
        app.open()
        try:
            with pytest.raises(NomadError, match="refused the request: HTTP 401") as exc:
                app.send(app.request("g", "q", []))
        finally:
            app.close()
    assert "ECHOED" not in str(exc.value) and str(exc.value).count("<redacted>") == 2, str(exc.value)


def test_a_value_typed_into_headers_env_is_refused_without_showing_it() -> None:
    with pytest.raises(NomadError, match="app.headers_env.Authorization must name the environment variable") as exc:
        _app("http://unused", headers_env={"Authorization": "Bearer tok-TYPED-1"}).open()
    assert "TYPED" not in str(exc.value) and exc.value.exit_code == 2


@pytest.mark.parametrize("bad", [{"id": "lantern"}, ["lantern"], 1.5, True])
def test_a_context_field_that_is_not_text_is_refused_by_name(bad: object) -> None:
    app = _app("http://unused")
    with pytest.raises(NomadError, match=r"a context of golden g1 has a \w+ at app.context_doc_id='doc_id', not text"):
        app.parse({"answer": "x", "contexts": [{"doc_id": bad, "text": "t"}]}, None, "g1")
    with pytest.raises(NomadError, match=r"at app.context_text='text', not text"):
        app.parse({"answer": "x", "contexts": [{"doc_id": "d", "text": bad}]}, None, "g1")
    # A whole-number id is an id: read as its digits.
    assert app.parse({"answer": "x", "contexts": [{"doc_id": 42, "text": "t"}]}, None, "g1").contexts == [("42", "t")]
