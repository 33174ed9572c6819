"""The user's own app over HTTP: one request per golden (and repeat), the answer and the contexts read from paths
into its JSON response.

The body is a JSON template whose strings may hold `{query}`, `{id}` and `{history}`; a string that is exactly
`{history}` or `{messages}` becomes the list of chat messages (the conversation before the question, or with the
question as its last user message). Header values named in `headers_env` are read from the environment at request
time: they never enter the config, the cache key, a report or an error message.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nomad_eval.backends.base import Identity
from nomad_eval.backends.bounded import ResponseTooLarge, bounded_client, redirect, transient
from nomad_eval.backends.chat import count
from nomad_eval.backends.retry import Transient, retried, within
from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact_text

Message = dict[str, str]
# An environment variable's name as a shell writes it: a value of headers_env that is not one is never echoed.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Header names that carry credentials: their values must come from the environment (headers_env), never the config.
CREDENTIAL_HEADER = re.compile(r"authori[sz]ation|cookie|key|token|secret|passw|auth|session", re.IGNORECASE)


@dataclass(frozen=True)
class AppRequest:
    """What is sent for one golden: the identity of a cached response."""

    golden_id: str
    method: str
    url: str
    body: Any

    def key(self, app: Mapping[str, object], repeat: int, run: str | None = None) -> str:
        """The request's cache key; with `run`, the key of this request's answer within that run alone (what a
        resumed run reads back), without it the key any run shares (read only with an explicit cache=true)."""
        ident: dict[str, object] = {"app": app, "method": self.method, "url": self.url, "body": self.body, "r": repeat}
        if run is not None:
            ident["run"] = run
        blob = json.dumps(ident, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class AppReply:
    """The app's response to one request, parsed: contexts are (doc id, text) pairs, None when not exposed."""

    answer: str
    contexts: list[tuple[str | None, str | None]] | None
    latency_ms: float | None
    prompt_tokens: int | None
    completion_tokens: int | None


def render(template: Any, query: str, history: list[Message], golden_id: str) -> Any:
    """The body template with the golden filled in (a pure function of its arguments)."""
    if isinstance(template, Mapping):
        return {str(k): render(v, query, history, golden_id) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, query, history, golden_id) for v in template]
    if not isinstance(template, str):
        return template
    if template == "{history}":
        return history
    if template == "{messages}":
        return [*history, {"role": "user", "content": query}]
    text = "\n".join(f"{m['role']}: {m['content']}" for m in history)
    return template.replace("{history}", text).replace("{query}", query).replace("{id}", golden_id)


def at_path(data: Any, path: str) -> Any:
    """`data` followed along a dotted path (`choices.0.message.content`); KeyError naming the missing step."""
    node = data
    for step in path.split(".") if path else []:
        if isinstance(node, list) and step.lstrip("-").isdigit() and -len(node) <= int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, Mapping) and step in node:
            node = node[step]
        else:
            raise KeyError(step)
    return node


class HttpApp:
    def __init__(self, name: str, url: str, method: str, headers: Mapping[str, str],
                 headers_env: Mapping[str, str], body: Any, answer_path: str, contexts_path: str | None,
                 context_doc_id: str | None, context_text: str | None, prompt_tokens_path: str | None,
                 completion_tokens_path: str | None, timeout: float, connect_timeout: float, deadline: float,
                 retries: int, concurrency: int, max_response_bytes: int) -> None:
        self.name = name
        self.url = url
        self.method = method.upper()
        self.headers = {str(k): str(v) for k, v in headers.items()}
        if credentials := sorted(h for h in self.headers if CREDENTIAL_HEADER.search(h)):
            raise NomadError(f"app.headers names {', '.join(credentials)}, which carry credentials: give each in "
                             "app.headers_env as the environment variable holding it (app.headers is written into "
                             "the run's config and reports)", 2)
        self.headers_env = {str(k): str(v) for k, v in headers_env.items()}
        self.body = body
        self.paths = {"answer": answer_path, "contexts": contexts_path, "doc_id": context_doc_id,
                      "text": context_text, "prompt_tokens": prompt_tokens_path,
                      "completion_tokens": completion_tokens_path}
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.deadline = deadline
        self.retries = retries
        self.concurrency = concurrency
        self.max_response_bytes = max_response_bytes
        self._client: Any = None
        self._lock = threading.Lock()
        self._ends_at: float | None = None

    def identity(self) -> Identity:
        """What makes a response what it is, for the cache key: the plain headers as sent, the secret ones by name
        only (their values are secrets; a changed token is not a changed app)."""
        return {"backend": "http", "headers": self.headers, "headers_env": sorted(self.headers_env)}

    def request(self, golden_id: str, query: str, history: list[Message]) -> AppRequest:
        body = render(self.body, query, history, golden_id)
        return AppRequest(golden_id, self.method, self.url, body)

    def _secret_headers(self) -> dict[str, str]:
        """The secret headers' values, read from the environment. A value of headers_env that is no variable's
        name is most likely the secret itself, typed where its variable's name belongs: named by header only."""
        typed = sorted(h for h, v in self.headers_env.items() if not ENV_NAME.fullmatch(v))
        if typed:
            raise NomadError(f"app.headers_env.{', app.headers_env.'.join(typed)} must name the environment "
                             "variable holding the header's value (app.headers_env: {Authorization: APP_TOKEN}), "
                             "not the value itself; its value is not shown", 2)
        missing = [v for v in self.headers_env.values() if v not in os.environ]
        if missing:
            raise NomadError(f"app.headers_env names environment variable(s) {', '.join(sorted(missing))}, which "
                             "are not set", 2)
        return {h: os.environ[v] for h, v in self.headers_env.items()}

    def _clean(self, text: str) -> str:
        """Server-supplied text for a message: an app may echo a secret header it was sent (a 401 quoting the
        token), so their values are redacted along with everything redact_text finds."""
        return redact_text(text, [os.environ.get(v) for v in self.headers_env.values()])

    def open(self) -> None:
        """Start the run's wall-clock deadline and its one client (shared by the threads: httpx's is safe)."""
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(headers={**self.headers, **self._secret_headers()},
                                        **bounded_client(self.max_response_bytes, "app.max_response_bytes"))
            self._ends_at = time.monotonic() + self.deadline

    def send(self, req: AppRequest) -> tuple[Any, float]:
        """The response's JSON and the latency of the call that gave it; bounded retries on transient failures."""
        where = redact_text(f"the app at {self.url} (golden {req.golden_id})")

        def once() -> tuple[Any, float]:
            return self._once(req, where)

        return retried(once, self.retries, where, until=lambda: (self._ends_at or 0.0) - time.monotonic())

    def _remaining(self, where: str) -> float:
        left = (self._ends_at or time.monotonic()) - time.monotonic()
        if left <= 0:
            raise NomadError(f"{where}: app.deadline of {self.deadline:g} s passed before every golden was answered "
                             "(the answers so far are kept: run again with resume=true and the same "
                             "paths.run_dir, or raise app.deadline)")
        return left

    def _once(self, req: AppRequest, where: str) -> tuple[Any, float]:
        import httpx

        wait = min(self.timeout, self._remaining(where))
        t0 = time.perf_counter()
        try:
            # `within`: a wall-clock limit on the whole answer, which httpx's per-read timeout is not.
            r = within(wait, lambda: self._client.request(
                req.method, req.url, json=req.body,
                timeout=httpx.Timeout(wait, connect=min(self.connect_timeout, wait))))
        except httpx.ConnectError as exc:
            raise NomadError(self._clean(f"{where} is unreachable: {exc}. Set app.url.")) from None
        except (httpx.TimeoutException, TimeoutError):
            self._remaining(where)
            raise NomadError(f"{where} did not answer within {wait:g} s (app.timeout)") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise Transient(f"connection dropped: {self._clean(str(exc))}") from None
        except ResponseTooLarge as exc:
            raise NomadError(f"{where} sent {exc}") from None
        latency = (time.perf_counter() - t0) * 1000
        if (again := transient(r)) is not None:
            raise again
        if (moved := redirect(r, "app.url")) is not None:
            raise NomadError(f"{where} {moved}")
        if r.status_code >= 400:
            raise NomadError(f"{where} refused the request: HTTP {r.status_code} {self._clean(r.text)[:200]!r}")
        try:
            return r.json(), latency
        except ValueError:
            raise NomadError(f"{where} answered HTTP {r.status_code} with a body that is not JSON: "
                             f"{self._clean(r.text)[:200]!r}") from None

    def parse(self, data: Any, latency_ms: float | None, golden_id: str) -> AppReply:
        """The answer, contexts and token counts at the configured paths; an error naming the path when absent."""
        def field(key: str, required: bool = False) -> Any:
            path = self.paths[key]
            if path is None:
                return None
            try:
                return at_path(data, path)
            except KeyError as exc:
                if not required:
                    return None
                raise NomadError(f"the app's response for golden {golden_id} has no {key} at app.{key}_path="
                                 f"{path!r} (no {exc.args[0]!r}): {json.dumps(data)[:200]}") from None

        answer = field("answer", required=True)
        if not isinstance(answer, str):
            raise NomadError(f"the app's answer for golden {golden_id} at app.answer_path={self.paths['answer']!r} "
                             f"is {type(answer).__name__}, not text")
        return AppReply(answer, self._contexts(field("contexts", required=True), golden_id), latency_ms,
                        count(field("prompt_tokens")), count(field("completion_tokens")))

    def _contexts(self, raw: Any, golden_id: str) -> list[tuple[str | None, str | None]] | None:
        if self.paths["contexts"] is None:
            return None
        if raw is None:  # the app said it retrieved nothing
            return []
        if not isinstance(raw, list):
            raise NomadError(f"the app's contexts for golden {golden_id} at app.contexts_path="
                             f"{self.paths['contexts']!r} are {type(raw).__name__}, not a list")
        out: list[tuple[str | None, str | None]] = []
        for item in raw:
            if isinstance(item, str):  # a bare passage text
                out.append((None, item))
                continue
            doc, text = (_text_at(item, self.paths[k], f"app.context_{k}", golden_id) for k in ("doc_id", "text"))
            if doc is None and text is None:
                raise NomadError(f"a context of golden {golden_id} has neither app.context_doc_id="
                                 f"{self.paths['doc_id']!r} nor app.context_text={self.paths['text']!r}: "
                                 f"{json.dumps(item)[:200]}")
            out.append((doc, text))
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _text_at(item: Any, path: str | None, setting: str, golden_id: str) -> str | None:
    """A context's doc id or text at `path`: text as it is, a whole number as its digits (ids are often numbers);
    anything else (an object, a list, a fraction, true) is refused by name rather than turned into its repr."""
    if path is None:
        return None
    try:
        value = at_path(item, path)
    except KeyError:
        return None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise NomadError(f"a context of golden {golden_id} has a {type(value).__name__} at {setting}={path!r}, not "
                     f"text: {json.dumps(value)[:200]}")
