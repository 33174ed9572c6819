"""The small protocols every backend implements; one module per implementation beside this one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from nomad_eval.base.atomic import JsonValue

if TYPE_CHECKING:
    import numpy as np

# What makes a backend's output what it is (model, weights, settings that change an answer or a vector): hashed
# into cache keys and written into reports.
Identity = dict[str, JsonValue]
# A point's payload as the vector store holds it (JSON on the wire to a server): chunk id, document, text, tag.
Payload = dict[str, JsonValue]


class Embedder(Protocol):
    """Turns text into vectors. Prefixes are applied by the caller, so the cache sees exact inputs. One whose model
    loads in this process may also offer `load()`: it is called before the embedding's progress starts, so the
    progress counts the work alone (harness/index.py)."""

    name: str
    dim: int
    max_input_tokens: int
    document_prefix: str
    query_prefix: str

    def identity(self) -> Identity: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def token_counts(self, texts: list[str]) -> list[int]:
        """How many input tokens each text costs, special tokens included."""
        ...


@dataclass(frozen=True)
class StoredPoint:
    point_id: str
    vector: np.ndarray
    payload: Payload


@dataclass(frozen=True)
class Hit:
    point_id: str
    score: float
    payload: Payload = field(default_factory=dict)


class Store(Protocol):
    """A vector store holding the eval's points beside anyone else's, told apart by a tag."""

    tag_key: str
    tag: str

    def upsert(self, points: list[StoredPoint]) -> None: ...

    def delete_tagged(self, fingerprint: str | None = None) -> None:
        """Delete the eval's tagged points of one fingerprint (None: of every fingerprint), and nothing else."""
        ...

    def count(self, fingerprint: str | None = None, tagged: bool = True) -> int: ...

    def search(
        self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None
    ) -> list[Hit]: ...

    def health(self) -> str | None:
        """What is wrong with the stored vectors, read from a sample (and what was done about it: a damaged
        embedded shard is moved aside at open), or None when they read back sound."""
        ...

    def close(self) -> None: ...
