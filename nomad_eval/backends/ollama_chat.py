"""Chat through the official `ollama` client: temperature 0, fixed seed, pinned num_ctx, explicit timeouts; and the
digest the server reports for a model tag (a re-pulled tag is a new model, so a new identity), which the Ollama
embedder reads too."""

from __future__ import annotations

import os
import threading
from typing import Any

from nomad_eval.backends.base import Identity
from nomad_eval.backends.bounded import ResponseTooLarge, bounded_client
from nomad_eval.backends.chat import BASE_URL_HINT, ChatOptions, ChatResult, Message, TokenLogprob, count
from nomad_eval.backends.retry import Transient, malformed, retried, within
from nomad_eval.base.errors import NomadError, RequestRejected
from nomad_eval.base.secrets import redact_text


def redact_echo(text: str) -> str:
    """Server-supplied text for a message: the official client sends $OLLAMA_API_KEY as a bearer token when it is
    set, and a server (or a proxy before it) may echo it."""
    return redact_text(text, [os.environ.get("OLLAMA_API_KEY")])


def ollama_client(base_url: str, timeout: Any, max_response_bytes: int, setting: str) -> Any:
    """The official client, every answer it reads bounded (backends/bounded.py)."""
    import ollama

    return ollama.Client(host=base_url, timeout=timeout, **bounded_client(max_response_bytes, setting))


def ollama_digest(client: Any, name: str, where: str, timeout: float) -> str:
    """The digest of `name` from the server's model list (`/api/tags`), asked within `timeout` seconds.

    `/api/show` describes a model but carries no digest; the list does, and it changes whenever the tag is pulled
    again. Without it a cached vector or answer could not be told from one made by the model now behind the tag,
    so an unreachable server or an unknown model is an error here, not a silent miss.
    """
    import httpx

    try:
        models = within(timeout, client.list).models
    except (httpx.TimeoutException, TimeoutError):
        raise NomadError(f"{where} did not list its models within {timeout} s") from None
    except (httpx.HTTPError, ConnectionError) as exc:
        raise NomadError(f"{where} is unreachable while reading the model's digest: {redact_echo(str(exc))}. "
                         "Start the server or set base_url.") from None
    except (ValueError, TypeError, AttributeError, KeyError) as exc:  # not JSON, or not a model list
        raise NomadError(f"{where} answered the model list (/api/tags) with {malformed(exc)}") from None
    except (Transient, ResponseTooLarge) as exc:  # bounded.py's refusals
        raise NomadError(f"{where} answered the model list (/api/tags) with {exc}") from None
    for m in models:
        if m.model in (name, f"{name}:latest") and m.digest:
            return str(m.digest)
    names = ", ".join(str(m.model) for m in models) or "(none)"
    raise NomadError(f"{where}: the server lists no model {name!r} with a digest; it has: {names}. "
                     "Pull it, or set the model name.")


def ollama_show(client: Any, name: str, timeout: float) -> dict[str, str]:
    """What `/api/show` says of the model: its quantisation, parameter count and trained context length, where the
    server says them; nothing when it cannot describe it (the digest, read before, already pins the weights)."""
    import httpx
    import ollama

    try:
        info = within(timeout, lambda: client.show(name))
        details, facts = info.details, dict(info.modelinfo or {})
    except (httpx.HTTPError, ConnectionError, TimeoutError, ollama.ResponseError, ValueError, TypeError,
            AttributeError, KeyError):
        return {}
    out = {"quantization": getattr(details, "quantization_level", None),
           "parameters": getattr(details, "parameter_size", None),
           "context_length": next((facts[k] for k in sorted(facts) if k.endswith(".context_length")), None)}
    return {k: str(v) for k, v in out.items() if v is not None}


class OllamaChat:
    def __init__(self, name: str, base_url: str, num_ctx: int, timeout: float, connect_timeout: float,
                 concurrency: int, evict_others: bool, warmup: bool, retries: int, max_response_bytes: int) -> None:
        self.name = name
        self.base_url = base_url
        self.num_ctx = num_ctx
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.concurrency = concurrency
        self.evict_others = evict_others
        self.warmup = warmup
        self.retries = retries
        self.max_response_bytes = max_response_bytes
        self._client: Any = None
        self._ready = False
        self._lock = threading.Lock()
        self._digest: str | None = None
        self._shown: dict[str, str] | None = None

    def served(self) -> dict[str, str]:
        """The model as the server reports it: its digest and what /api/show says (asked once)."""
        if self._shown is None:
            self._shown = ollama_show(self._connect(), self.name, self.timeout)
        return {"digest": str(self.identity()["digest"]), **self._shown}

    def identity(self) -> Identity:
        """What an answer depends on: the weights behind the tag (the server's digest, asked once) and num_ctx.
        The base URL is kept too: two servers may hold different builds of the same digest's runtime."""
        if self._digest is None:
            self._digest = ollama_digest(self._connect(), self.name, self._where(), self.timeout)
        # Without the URL's password: it changes no answer, and an identity is written into reports.
        return {"backend": "ollama", "base_url": redact_text(self.base_url), "model": self.name,
                "digest": self._digest, "num_ctx": self.num_ctx}

    def _where(self) -> str:
        return f"Ollama at {redact_text(self.base_url)} (model {self.name})"

    def _call(self, fn: Any) -> Any:
        """`fn()` (one request through the official client) within model.timeout of wall-clock time, retried
        while the failure is transient: a 429 or 5xx, a dropped connection, an answer the client cannot read."""
        import httpx
        import ollama

        def once() -> Any:
            try:
                return within(self.timeout, fn)
            except (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError) as exc:
                raise NomadError(f"{self._where()} is unreachable: {redact_echo(str(exc))}. Is the server running? "
                                 f"{BASE_URL_HINT}") from None
            except (httpx.TimeoutException, TimeoutError):
                raise NomadError(f"{self._where()} did not answer within {self.timeout} s (model.timeout)") from None
            except ollama.ResponseError as exc:
                if exc.status_code in (429, 500, 502, 503, 504):
                    raise Transient(f"HTTP {exc.status_code} {redact_echo(str(exc.error))[:200]}") from None
                if exc.status_code == 404:
                    raise NomadError(f"{self._where()}: model not found; the server has: {self._models()}") from None
                raise RequestRejected(f"{self._where()} refused the request: HTTP {exc.status_code} "
                                      f"{redact_echo(str(exc.error))[:200]}") from None
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                raise Transient(f"connection dropped: {redact_echo(str(exc))}") from None
            except ResponseTooLarge as exc:
                raise NomadError(f"{self._where()} sent {exc}") from None
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                raise Transient(malformed(exc)) from None

        return retried(once, self.retries, self._where())

    def _models(self) -> str:
        try:
            names = [str(m.model) for m in within(self.timeout, self._client.list).models]
        except Exception:
            return "(could not list models)"
        return ", ".join(names) or "(no models)"

    def _connect(self) -> Any:
        if self._client is None:
            import httpx

            self._client = ollama_client(self.base_url, httpx.Timeout(self.timeout, connect=self.connect_timeout),
                                         self.max_response_bytes, "model.max_response_bytes")
        return self._client

    def preflight(self) -> None:
        client = self._connect()
        names = [str(m.model) for m in self._call(lambda: client.list()).models]
        if self.name not in names and f"{self.name}:latest" not in names:
            raise NomadError(f"{self._where()}: the server has no model {self.name!r}; it has: "
                             f"{', '.join(names) or '(none)'}. Pull it, or set model.name.")

    def _get(self) -> Any:
        with self._lock:
            if not self._ready:
                self._prepare()
                self._ready = True
        return self._client

    def _prepare(self) -> None:
        self._connect()
        if self.evict_others:
            # Other resident models compete for memory and make timings meaningless: unload them.
            loaded = self._call(lambda: self._client.ps()).models
            for m in loaded:
                if m.model != self.name:
                    self._call(lambda m=m: self._client.generate(model=m.model, prompt="", keep_alive=0))
        if self.warmup:
            # One throwaway generation so the first scored answer does not pay the model load.
            self._call(lambda: self._client.chat(model=self.name, messages=[{"role": "user", "content": "hi"}],
                                                 options={"num_ctx": self.num_ctx, "num_predict": 1,
                                                          "temperature": 0}))

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult:
        client = self._get()
        opts = {"temperature": options.temperature, "seed": options.seed, "num_predict": options.max_tokens,
                "num_ctx": self.num_ctx}
        # None leaves the fields out of the request: servers older than logprobs support see what they always did.
        top = options.top_logprobs or None
        resp = self._call(lambda: client.chat(model=self.name, messages=messages, options=opts,
                                              format=options.json_schema, logprobs=bool(top) or None,
                                              top_logprobs=top))
        return ChatResult(resp.message.content or "", count(resp.prompt_eval_count), count(resp.eval_count),
                          _logprobs(resp))

    def close(self) -> None:
        self._client = None


def _logprobs(resp: Any) -> tuple[TokenLogprob, ...] | None:
    """The official client's `logprobs` (one entry per generated token), in the backend-neutral form."""
    if not resp.logprobs:
        return None
    return tuple(TokenLogprob(t.token, t.logprob, tuple((a.token, a.logprob) for a in t.top_logprobs or []))
                 for t in resp.logprobs)
