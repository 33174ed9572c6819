"""Any OpenAI-compatible chat server (llama.cpp's server, vLLM, Ollama's /v1) over plain HTTP."""

from __future__ import annotations

import threading
from typing import Any

from nomad_eval.backends.chat import BASE_URL_HINT, ChatOptions, ChatResult, Message, openai_logprobs
from nomad_eval.backends.retry import Transient, with_retries
from nomad_eval.base.errors import NomadError, RequestRejected


class OpenAIChat:
    def __init__(self, name: str, base_url: str, num_ctx: int, timeout: float, connect_timeout: float,
                 concurrency: int, api_key: str | None, retries: int) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.concurrency = concurrency
        self.api_key = api_key
        self.retries = retries
        self._client: Any = None
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        # An OpenAI-compatible server reports no weights digest: the base URL and model name are the best
        # identity there is, so a different server under the same model name is at least a different key.
        return {"backend": "openai", "base_url": self.base_url, "model": self.name, "num_ctx": self.num_ctx}

    def _url(self, path: str) -> str:
        base = self.base_url if self.base_url.endswith("/v1") else self.base_url + "/v1"
        return base + path

    def _connect(self) -> Any:
        import httpx

        # Concurrent requests share one client (httpx.Client is thread-safe): never build two.
        with self._lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                                            headers=headers)
            return self._client

    def preflight(self) -> None:
        import httpx

        where = f"OpenAI-compatible server at {self.base_url} (model {self.name})"
        try:
            r = self._connect().get(self._url("/models"))
        except httpx.ConnectError as exc:
            raise NomadError(f"{where} is unreachable: {exc}. {BASE_URL_HINT}") from None
        except httpx.TimeoutException:
            raise NomadError(f"{where} did not answer within {self.timeout} s (model.timeout)") from None
        if r.status_code == 200:
            ids = [m.get("id") for m in r.json().get("data", [])]
            if ids and self.name not in ids:
                raise NomadError(f"{where}: the server has no model {self.name!r}; it has: {', '.join(ids)}")

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult:
        import httpx

        client = self._connect()
        where = f"OpenAI-compatible server at {self.base_url} (model {self.name})"
        body = {"model": self.name, "messages": messages, **options.as_dict()}

        def once() -> dict[str, Any]:
            try:
                r = client.post(self._url("/chat/completions"), json=body)
            except httpx.ConnectError as exc:
                raise NomadError(f"{where} is unreachable: {exc}. {BASE_URL_HINT}") from None
            except httpx.TimeoutException:
                raise NomadError(f"{where} did not answer within {self.timeout} s (model.timeout)") from None
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                raise Transient(f"connection dropped: {exc}") from None
            if r.status_code in (429, 500, 502, 503, 504):
                raise Transient(f"HTTP {r.status_code}")
            if r.status_code == 404:
                raise NomadError(f"{where}: model or endpoint not found; the server has: {self._models()}")
            if r.status_code >= 400:
                raise RequestRejected(f"{where} refused the request: HTTP {r.status_code} {r.text[:200]}")
            return r.json()  # type: ignore[no-any-return]

        try:
            data = with_retries(once, self.retries)
        except Transient as exc:
            raise NomadError(f"{where} kept failing after {self.retries} tries: {exc}") from None
        usage = data.get("usage") or {}
        choice = data["choices"][0]
        return ChatResult(choice["message"].get("content") or "", usage.get("prompt_tokens"),
                          usage.get("completion_tokens"), openai_logprobs(choice))

    def _models(self) -> str:
        try:
            data = self._client.get(self._url("/models")).json()
            return ", ".join(m["id"] for m in data.get("data", [])) or "(no models)"
        except Exception:
            return "(could not list models)"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
