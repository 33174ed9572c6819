"""One hash that names everything the store's contents depend on."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from nomad_eval.data.corpus import Document
from nomad_eval.rag.chunking import ChunkerParams


def corpus_fingerprint(
    docs: list[Document], chunker: ChunkerParams, embedder_identity: dict[str, object],
    extra: dict[str, object] | None = None,
) -> str:
    h = hashlib.sha256()
    head = {"chunker": asdict(chunker), "embedder": embedder_identity, "extra": extra or {}}
    h.update(json.dumps(head, sort_keys=True).encode())
    for doc in sorted(docs, key=lambda d: d.doc_id):
        # Length-prefixed so no two different corpora can concatenate to the same bytes.
        for part in (doc.doc_id, doc.text):
            raw = part.encode()
            h.update(len(raw).to_bytes(8, "little"))
            h.update(raw)
    return h.hexdigest()[:16]
