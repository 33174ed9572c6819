"""What a run measured on, item by item: the report's `subject`, from which compare names what changed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TypedDict

from nomad_eval.data.anchors import GoldenAnchors, anchor_goldens, doc_hash
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden, judgement_hash
from nomad_eval.rag.chunking import Chunk


class SubjectParts(TypedDict):
    documents: dict[str, str]                 # doc id -> hash of its text
    chunks: dict[str, int]                    # doc id -> chunks
    goldens: dict[str, str]                   # golden id -> judgement hash
    anchors: dict[str, GoldenAnchors]


def subject_parts(documents: Sequence[Document], chunks: Sequence[Chunk], goldens: Sequence[Golden]
                  ) -> SubjectParts:
    """The corpus's own documents (distractors are named by the store setting instead), their chunk counts (empty
    for a user's own pipeline, which chunks nothing here), each golden's judgement hash, and each answerable
    golden's evidence anchors (data/anchors.py), so a later run re-anchors against its own corpus."""
    own = [d for d in documents if not d.distractor]
    ids = {d.doc_id for d in own}
    counts = Counter(c.doc_id for c in chunks if c.doc_id in ids)
    return SubjectParts(documents={d.doc_id: doc_hash(d.text) for d in sorted(own, key=lambda d: d.doc_id)},
                        chunks={d: counts[d] for d in sorted(counts)},
                        goldens={g.id: judgement_hash(g) for g in goldens},
                        anchors=anchor_goldens(goldens, own))
