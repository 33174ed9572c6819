"""A small Ollama-API-compatible server on loopback, answering with real embedded models.

It lets the official `ollama` client's requests and responses be exercised for real where no Ollama
server can be installed. Only the endpoints the harness uses are served.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.servers._http import JsonHandler, running

EmbedFn = Callable[[list[str]], list[list[float]]]
# messages, options -> (answer, prompt tokens, answer tokens)
ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], tuple[str, int, int]]
NOW = "2026-01-01T00:00:00Z"


def _handler(models: dict[str, EmbedFn], chats: dict[str, ChatFn], log: list[dict[str, Any]],
             digests: dict[str, str]) -> type[JsonHandler]:
    names = [*models, *chats]

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            if self.path == "/api/tags":
                # A real server reports each tag's manifest digest here; `digests` lets a test "re-pull" a tag.
                self._send(200, {"models": [{"name": m, "model": m, "digest": digests.get(m, f"sha256-{m}-1")}
                                            for m in names]})
            elif self.path == "/api/ps":
                resident = [{"name": m, "model": m, "size": 1, "digest": "0", "expires_at": NOW}
                            for m in ["other-model:7b", *chats]]
                self._send(200, {"models": resident})
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            body = self._body()
            log.append({"path": self.path, **body})
            if self.path == "/api/chat":
                name = body.get("model")
                if name not in chats:
                    self._send(404, {"error": f"model '{name}' not found"})
                    return
                text, n_in, n_out = chats[name](body.get("messages", []), body.get("options") or {})
                self._send(200, {"model": name, "created_at": NOW, "message": {"role": "assistant", "content": text},
                                 "done": True, "done_reason": "stop", "prompt_eval_count": n_in,
                                 "eval_count": n_out})
            elif self.path == "/api/show":
                name = body.get("model")
                if name not in names:
                    self._send(404, {"error": f"model '{name}' not found"})
                    return
                # `digests["<name>/q"]` sets the quantisation reported, for a test that re-pulls the tag.
                details = {"format": "gguf", "family": "llama", "parameter_size": "3.2B",
                           "quantization_level": digests.get(f"{name}/q", "Q4_K_M")}
                self._send(200, {"modified_at": NOW, "details": details,
                                 "model_info": {"general.architecture": "llama", "llama.context_length": 131072}})
            elif self.path == "/api/generate":  # only used to unload a model (keep_alive=0)
                self._send(200, {"model": body.get("model"), "created_at": NOW, "response": "", "done": True,
                                 "done_reason": "unload"})
            elif self.path == "/api/embed":
                name = body.get("model")
                if name not in models:
                    self._send(404, {"error": f"model '{name}' not found"})
                    return
                inputs = body.get("input")
                texts = [inputs] if isinstance(inputs, str) else list(inputs)
                self._send(200, {"model": name, "embeddings": models[name](texts)})
            else:
                self._send(404, {"error": "not found"})

    return Handler


@contextmanager
def serve(models: dict[str, EmbedFn], chats: dict[str, ChatFn] | None = None,
          log: list[dict[str, Any]] | None = None, digests: dict[str, str] | None = None) -> Iterator[str]:
    """`digests` is read on every request, so a test may change it while the server runs."""
    with running(_handler(models, chats or {}, log if log is not None else [],
                          digests if digests is not None else {})) as url:
        yield url
