"""The small protocols every backend implements; one module per implementation beside this one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns text into vectors. Prefixes are applied by the caller, so the cache sees exact inputs. One whose model
    loads in this process may also offer `load()`: it is called before the embedding's progress starts, so the
    progress counts the work alone (harness/index.py)."""

    name: str
    dim: int
    max_input_tokens: int
    document_prefix: str
    query_prefix: str

    def identity(self) -> dict[str, Any]: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def token_counts(self, texts: list[str]) -> list[int]:
        """How many input tokens each text costs, special tokens included."""
        ...


@dataclass(frozen=True)
class StoredPoint:
    point_id: str
    vector: np.ndarray
    payload: dict[str, Any]


@dataclass(frozen=True)
class Hit:
    point_id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


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
