"""One hash that names everything the store's contents depend on."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from nomad_eval.data.corpus import Document
from nomad_eval.rag.chunking import CHUNKER_VERSION, ChunkerParams


def corpus_fingerprint(
    docs: list[Document], chunker: ChunkerParams | None, embedder_identity: dict[str, object] | None,
    extra: dict[str, object] | None = None,
) -> str:
    """The documents, and when the harness chunks and embeds them, every setting that changes a stored vector.

    A user's own pipeline (chunker and embedder None) reads only the documents: its unused embedder's settings
    must not make two identical corpora look different.
    """
    h = hashlib.sha256()
    chunking = None if chunker is None else {**asdict(chunker), "version": CHUNKER_VERSION}
    head = {"chunker": chunking, "embedder": embedder_identity, "extra": extra or {}}
    h.update(json.dumps(head, sort_keys=True).encode())
    for doc in sorted(docs, key=lambda d: d.doc_id):
        # Length-prefixed so no two different corpora can concatenate to the same bytes.
        for part in (doc.doc_id, doc.text):
            raw = part.encode()
            h.update(len(raw).to_bytes(8, "little"))
            h.update(raw)
    return h.hexdigest()[:16]  # the form base/safe_names.FINGERPRINT checks before a fingerprint becomes a path
