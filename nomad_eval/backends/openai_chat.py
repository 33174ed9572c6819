"""Any OpenAI-compatible chat server (llama.cpp's server, vLLM, Ollama's /v1) over plain HTTP."""

from __future__ import annotations

import threading
from typing import Any

from nomad_eval.backends.base import Identity
from nomad_eval.backends.bounded import ResponseTooLarge, bounded_client, redirect, transient
from nomad_eval.backends.chat import BASE_URL_HINT, ChatOptions, ChatResult, Malformed, Message, openai_answer
from nomad_eval.backends.retry import Transient, retried, within
from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.errors import NomadError, RequestRejected
from nomad_eval.base.secrets import redact_text


class OpenAIChat:
    # Its identity is the URL and the model's name; which model really answered is said with each answer.
    reports_served = True

    def __init__(self, name: str, base_url: str, num_ctx: int, timeout: float, connect_timeout: float,
                 concurrency: int, api_key: str | None, retries: int, max_response_bytes: int) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.concurrency = concurrency
        self.api_key = api_key
        self.retries = retries
        self.max_response_bytes = max_response_bytes
        self._client: Any = None
        self._lock = threading.Lock()
        self._served: dict[str, str | None] = {}

    def served(self) -> dict[str, str]:
        """What the server said of the model with its latest answer: the model id it reports and its system
        fingerprint (or that it reports none); empty before the first answer."""
        if not self._served:
            return {}
        return {"model": self._served.get("model") or "(not reported)",
                "system_fingerprint": self._served.get("system_fingerprint") or "(not reported)"}

    def identity(self) -> Identity:
        # An OpenAI-compatible server reports no weights digest: the base URL and model name are the best
        # identity there is, so a different server under the same model name is at least a different key.
        # Without the URL's password: it changes no answer, and an identity is written into reports.
        return {"backend": "openai", "base_url": redact_text(self.base_url), "model": self.name,
                "num_ctx": self.num_ctx}

    def _where(self) -> str:
        return f"OpenAI-compatible server at {redact_text(self.base_url)} (model {self.name})"

    def _clean(self, text: str) -> str:
        """Server-supplied text for a message: a server may echo the key it was sent."""
        return redact_text(text, [self.api_key] if self.api_key else [])

    def _url(self, path: str) -> str:
        """`path` under the base URL's /v1, its query string (if any) kept after the path."""
        import httpx

        base = httpx.URL(self.base_url)
        root = base.path.rstrip("/")
        return str(base.copy_with(path=(root if root.endswith("/v1") else root + "/v1") + path))

    def _connect(self) -> Any:
        import httpx

        # Concurrent requests share one client (httpx.Client is thread-safe): never build two.
        with self._lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                                            headers=headers, **bounded_client(self.max_response_bytes,
                                                                              "model.max_response_bytes"))
            return self._client

    def _request(self, method: str, path: str, body: JsonObject | None = None) -> Any:
        """One HTTP exchange within model.timeout of wall-clock time; a dropped connection is Transient."""
        import httpx

        client = self._connect()
        try:
            return within(self.timeout, lambda: client.request(method, self._url(path), json=body))
        except httpx.ConnectError as exc:
            raise NomadError(f"{self._where()} is unreachable: {self._clean(str(exc))}. {BASE_URL_HINT}") from None
        except (httpx.TimeoutException, TimeoutError):
            raise NomadError(f"{self._where()} did not answer within {self.timeout} s (model.timeout)") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise Transient(f"connection dropped: {self._clean(str(exc))}") from None
        except ResponseTooLarge as exc:
            raise NomadError(f"{self._where()} sent {exc}") from None

    def _json(self, r: Any) -> Any:
        try:
            return r.json()
        except ValueError:
            raise Transient(f"HTTP {r.status_code} with a body that is not JSON: "
                            f"{self._clean(r.text)[:120]!r}") from None

    def _retrying(self, once: Any) -> Any:
        return retried(once, self.retries, self._where())

    def preflight(self) -> None:
        def once() -> list[str]:
            r = self._request("GET", "/models")
            if (again := transient(r)) is not None:
                raise Transient(f"{again} for the model list", again.retry_after)
            if r.status_code != 200:
                return []  # a server without a model list: the first request says whether the model exists
            return self._model_ids(r)

        ids = self._retrying(once)
        if ids and self.name not in ids:
            raise NomadError(f"{self._where()}: the server has no model {self.name!r}; it has: {', '.join(ids)}")

    def _model_ids(self, r: Any) -> list[str]:
        data = self._json(r)
        models = data.get("data") if isinstance(data, dict) else None
        if not isinstance(models, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str)
                                                   for m in models):
            raise Transient(f"HTTP {r.status_code} with a malformed model list: {self._clean(r.text)[:120]!r}")
        return [str(m["id"]) for m in models]

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult:
        body = {"model": self.name, "messages": messages, **options.as_dict()}

        def once() -> ChatResult:
            r = self._request("POST", "/chat/completions", body)
            if (again := transient(r)) is not None:
                raise again
            if (moved := redirect(r, "model.base_url")) is not None:
                raise NomadError(f"{self._where()} {moved}")
            if r.status_code == 404:
                raise NomadError(f"{self._where()}: model or endpoint not found; the server has: {self._models()}")
            if r.status_code >= 400:
                raise RequestRejected(f"{self._where()} refused the request: HTTP {r.status_code} "
                                      f"{self._clean(r.text)[:200]}")
            try:
                result = openai_answer(self._json(r))
            except Malformed as exc:
                raise Transient(f"HTTP {r.status_code} with a malformed answer ({exc}): "
                                f"{self._clean(r.text)[:120]!r}") from None
            self._served = result.served or {}
            return result

        return self._retrying(once)  # type: ignore[no-any-return]

    def _models(self) -> str:
        try:
            return ", ".join(self._model_ids(self._request("GET", "/models"))) or "(no models)"
        except Exception:
            return "(could not list models)"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
