"""Embeddings from an Ollama server through the official client, always with a timeout."""

from __future__ import annotations

from typing import Any

import numpy as np

from nomad_eval.backends.ollama_digest import ollama_digest
from nomad_eval.base.errors import NomadError


class OllamaEmbedder:
    def __init__(
        self,
        name: str,
        dim: int,
        max_input_tokens: int,
        document_prefix: str,
        query_prefix: str,
        base_url: str,
        timeout: float,
        chars_per_token: float = 4.0,
        batch_size: int = 32,
    ) -> None:
        self.name = name
        self.dim = dim
        self.max_input_tokens = max_input_tokens
        self.document_prefix = document_prefix
        self.query_prefix = query_prefix
        self.base_url = base_url
        self.timeout = timeout
        self.chars_per_token = chars_per_token
        self.batch_size = batch_size
        self._client: Any = None
        self._digest: str | None = None

    def identity(self) -> dict[str, Any]:
        """Everything that changes a vector. The digest comes from the server (one call, then remembered): the
        same tag re-pulled is other weights. `base_url` is left out because the digest already says which model
        answered; timeouts, batching and the token estimate change nothing embedded."""
        if self._digest is None:
            self._digest = ollama_digest(self._get_client(), self.name, f"Ollama embedder at {self.base_url}")
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
            import ollama

            self._client = ollama.Client(host=self.base_url, timeout=self.timeout)
        return self._client

    def embed(self, texts: list[str]) -> np.ndarray:
        import httpx
        import ollama

        out: list[list[float]] = []
        try:
            for i in range(0, len(texts), self.batch_size):
                # num_ctx makes max_input_tokens the real truncation point, not only the warning's.
                resp = self._get_client().embed(model=self.name, input=texts[i : i + self.batch_size],
                                                options={"num_ctx": self.max_input_tokens})
                out.extend(resp.embeddings)
        except (httpx.HTTPError, ConnectionError) as exc:
            raise NomadError(
                f"Ollama embedder at {self.base_url} (model {self.name}) is unreachable: {exc}. "
                "Start the server or set embedder.base_url."
            ) from None
        except ollama.ResponseError as exc:
            raise NomadError(f"Ollama at {self.base_url} refused model {self.name}: {exc.error}") from None
        arr = np.asarray(out, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise NomadError(
                f"Ollama model {self.name} returned vectors of shape {arr.shape}, "
                f"but embedder.dim is {self.dim}: set embedder.dim to match"
            )
        return arr

    def token_counts(self, texts: list[str]) -> list[int]:
        # Ollama exposes no tokenizer: estimate, erring long so truncation warnings err on the safe side.
        return [int(len(t) / self.chars_per_token) + 2 for t in texts]
