"""What a run measured on, item by item: the report's `subject`, from which compare names what changed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from nomad_eval.data.anchors import anchor_goldens, doc_hash
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden, judgement_hash
from nomad_eval.rag.chunking import Chunk


def subject_parts(documents: Sequence[Document], chunks: Sequence[Chunk], goldens: Sequence[Golden]
                  ) -> dict[str, Any]:
    """The corpus's own documents (distractors are named by the store setting instead), their chunk counts (empty
    for a user's own pipeline, which chunks nothing here), each golden's judgement hash, and each answerable
    golden's evidence anchors (data/anchors.py), so a later run re-anchors against its own corpus."""
    own = [d for d in documents if not d.distractor]
    ids = {d.doc_id for d in own}
    counts = Counter(c.doc_id for c in chunks if c.doc_id in ids)
    return {"documents": {d.doc_id: doc_hash(d.text) for d in sorted(own, key=lambda d: d.doc_id)},
            "chunks": {d: counts[d] for d in sorted(counts)},
            "goldens": {g.id: judgement_hash(g) for g in goldens},
            "anchors": anchor_goldens(goldens, own)}
