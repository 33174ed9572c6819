"""Character chunking with overlap, breaking at the most natural boundary near the window's end."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nomad_eval.base.json_fields import whole
from nomad_eval.data.corpus import Document

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
# Preferred break points, best first; a break is taken only in the window's second half so
# chunks never shrink to slivers.
_BREAKS = ("\n\n", "\n", ". ", " ")
# Bumped whenever a change to this module's code can move a chunk boundary, heading or id: it is part of the
# corpus fingerprint, so stores and baselines built by older chunking are never mistaken for current ones.
CHUNKER_VERSION = 3


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    path: str
    index: int
    heading: str
    text: str
    start: int


@dataclass(frozen=True)
class ChunkerParams:
    # pipeline.chunk_size, pipeline.chunk_overlap and pipeline.whole_document (harness/runtime.py).
    chunk_size: int
    overlap: int
    whole_document: bool

    def __post_init__(self) -> None:
        if self.chunk_size <= 0 or not 0 <= self.overlap < self.chunk_size:
            raise ValueError(
                f"chunker needs chunk_size > 0 and 0 <= overlap < chunk_size, "
                f"got chunk_size={self.chunk_size} overlap={self.overlap}"
            )

    @classmethod
    def of(cls, pipeline: Mapping[str, object]) -> ChunkerParams:
        """From a pipeline's chunk_size, chunk_overlap and whole_document as the config holds them (checked whole
        numbers and a bool, config/groups.py's PipelineKeys)."""
        return cls(whole(pipeline["chunk_size"]), whole(pipeline["chunk_overlap"]), bool(pipeline["whole_document"]))


def _cut(text: str, start: int, size: int, heading_starts: list[int]) -> int:
    end = start + size
    if end >= len(text):
        return len(text)
    half = start + size // 2
    cut = end
    for sep in _BREAKS:
        pos = text.rfind(sep, half, end)
        if pos != -1:
            cut = pos + len(sep)
            break
    # A heading belongs to the text under it: break before the last heading that opens past the chunk's first
    # line, so no chunk ends with the next section's heading while that section's text starts the next chunk.
    inside = [h for h in heading_starts if start < h < cut]
    if inside and text[inside[-1] : cut].strip().count("\n") == 0:
        return inside[-1]
    if inside and inside[-1] >= half:
        return inside[-1]
    return cut


def _heading_at(headings: list[tuple[int, str]], start: int, end: int, title: str) -> str:
    """The heading in force at the chunk's start, or one opening within its first quarter."""
    current = title
    early = start + (end - start) // 4
    for pos, name in headings:
        if pos <= early:
            current = name
        else:
            break
    return current


def chunk_document(doc: Document, params: ChunkerParams) -> list[Chunk]:
    text = doc.text
    headings = [(m.start(), m.group(1)) for m in _HEADING.finditer(text)]
    heading_starts = [pos for pos, _ in headings]
    if params.whole_document:
        return [Chunk(f"{doc.doc_id}#0", doc.doc_id, doc.path, 0, doc.title, text.strip(), 0)]
    chunks: list[Chunk] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, params.chunk_size, heading_starts)
        body = text[start:end].strip()
        if body:
            idx = len(chunks)
            heading = _heading_at(headings, start, end, doc.title)
            chunks.append(Chunk(f"{doc.doc_id}#{idx}", doc.doc_id, doc.path, idx, heading, body, start))
        if end >= len(text):
            break
        nxt = max(end - params.overlap, start + 1)
        # Start the overlap on a word boundary so no chunk opens mid-word.
        space = text.find(" ", nxt, end)
        start = space + 1 if params.overlap and space != -1 else nxt
    return chunks


def chunk_corpus(docs: list[Document], params: ChunkerParams) -> list[Chunk]:
    return [c for d in docs for c in chunk_document(d, params)]
