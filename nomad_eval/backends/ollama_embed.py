"""Embeddings from an Ollama server through the official client, always with a timeout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nomad_eval.backends.base import Identity
from nomad_eval.backends.bounded import ResponseTooLarge
from nomad_eval.backends.ollama_chat import ollama_client, ollama_digest, ollama_show, redact_echo
from nomad_eval.backends.retry import Transient, malformed, retried, within
from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact_text


@dataclass(eq=False)
class OllamaEmbedder:
    name: str
    dim: int
    max_input_tokens: int
    document_prefix: str
    query_prefix: str
    base_url: str
    timeout: float
    retries: int
    max_response_bytes: int
    chars_per_token: float = 4.0
    batch_size: int = 32
    _client: Any = field(default=None, init=False, repr=False)
    _digest: str | None = field(default=None, init=False, repr=False)
    _shown: dict[str, str] | None = field(default=None, init=False, repr=False)

    def served(self) -> dict[str, str]:
        """The model as the server reports it: its digest and what /api/show says (asked once)."""
        if self._shown is None:
            self._shown = ollama_show(self._get_client(), self.name, self.timeout)
        return {"digest": str(self.identity()["digest"]), **self._shown}

    def identity(self) -> Identity:
        """Everything that changes a vector. The digest comes from the server (one call, then remembered): the
        same tag re-pulled is other weights. `base_url` is left out because the digest already says which model
        answered; timeouts, batching and the token estimate change nothing embedded."""
        if self._digest is None:
            self._digest = ollama_digest(self._get_client(), self.name, self._where(), self.timeout)
        return {
            "backend": "ollama",
            "model": self.name,
            "digest": self._digest,
            "dim": self.dim,
            "max_input_tokens": self.max_input_tokens,
            "document_prefix": self.document_prefix,
            "query_prefix": self.query_prefix,
        }

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = ollama_client(self.base_url, self.timeout, self.max_response_bytes,
                                         "embedder.max_response_bytes")
        return self._client

    def _where(self) -> str:
        return f"Ollama embedder at {redact_text(self.base_url)} (model {self.name})"

    def _batch(self, part: list[str]) -> list[Any]:
        """One batch's vectors within embedder.timeout of wall-clock time; a 5xx or an answer the client cannot
        read is tried again (embedder.retries tries in all)."""
        import httpx
        import ollama

        def once() -> list[Any]:
            try:
                # num_ctx makes max_input_tokens the real truncation point, not only the warning's.
                return list(within(self.timeout, lambda: self._get_client().embed(
                    model=self.name, input=part, options={"num_ctx": self.max_input_tokens})).embeddings)
            except (httpx.TimeoutException, TimeoutError):
                raise NomadError(f"{self._where()} did not answer within {self.timeout} s "
                                 "(embedder.timeout)") from None
            except (httpx.HTTPError, ConnectionError) as exc:
                raise NomadError(f"{self._where()} is unreachable: {redact_echo(str(exc))}. "
                                 "Start the server or set embedder.base_url.") from None
            except ollama.ResponseError as exc:
                if exc.status_code in (429, 500, 502, 503, 504):
                    raise Transient(f"HTTP {exc.status_code} {redact_echo(str(exc.error))[:200]}") from None
                raise NomadError(f"{self._where()} refused the request: HTTP {exc.status_code} "
                                 f"{redact_echo(str(exc.error))[:200]}") from None
            except ResponseTooLarge as exc:
                raise NomadError(f"{self._where()} sent {exc}") from None
            except (ValueError, TypeError, AttributeError, KeyError) as exc:
                raise Transient(malformed(exc)) from None

        return retried(once, self.retries, self._where())

    def embed(self, texts: list[str]) -> np.ndarray:
        out: list[Any] = []
        for i in range(0, len(texts), self.batch_size):
            out.extend(self._batch(texts[i : i + self.batch_size]))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            arr = np.asarray(out, dtype=np.float32)
        except (ValueError, TypeError):
            arr = np.zeros(0, dtype=np.float32)  # vectors of different lengths: reported as a shape below
        if arr.ndim != 2 or arr.shape[0] != len(texts):
            raise NomadError(f"{self._where()} answered {len(texts)} texts with a malformed set of vectors "
                             f"(shape {arr.shape})")
        if arr.shape[1] != self.dim:
            raise NomadError(f"{self._where()} returned vectors of shape {arr.shape}, but embedder.dim is "
                             f"{self.dim}: set embedder.dim to match")
        return arr

    def token_counts(self, texts: list[str]) -> list[int]:
        # Ollama exposes no tokenizer: estimate, erring long so truncation warnings err on the safe side.
        return [int(len(t) / self.chars_per_token) + 2 for t in texts]
