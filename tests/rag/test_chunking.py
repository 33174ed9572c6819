from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nomad_eval.data.corpus import Document
from nomad_eval.rag.chunking import ChunkerParams, chunk_document

LONG = "# Manual\n\n" + "\n\n".join(
    f"## Section {i}\n\n" + " ".join(f"word{i}_{j}" for j in range(60)) for i in range(12)
)


def test_long_document_splits_with_stable_ids_and_headings() -> None:
    doc = Document("manual", "corpus/manual.md", LONG, "Manual")
    params = ChunkerParams(chunk_size=400, overlap=60, whole_document=False)
    a, b = chunk_document(doc, params), chunk_document(doc, params)
    assert len(a) > 5
    assert [c.chunk_id for c in a] == [f"manual#{i}" for i in range(len(a))] == [c.chunk_id for c in b]
    assert all(len(c.text) <= 400 for c in a)
    assert {c.doc_id for c in a} == {"manual"} and a[0].heading in {"Manual", "Section 0"}
    assert any(c.heading == "Section 11" for c in a[-2:])


def test_whole_document_mode_is_one_chunk() -> None:
    doc = Document("d", "d.md", LONG, "Manual")
    chunks = chunk_document(doc, ChunkerParams(chunk_size=800, overlap=120, whole_document=True))
    assert len(chunks) == 1 and chunks[0].text == LONG.strip()


def test_bad_params_are_refused() -> None:
    with pytest.raises(ValueError, match="overlap"):
        ChunkerParams(chunk_size=100, overlap=100, whole_document=False)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab c\n.#", min_size=1, max_size=3000), st.integers(50, 400), st.integers(0, 49))
def test_every_character_is_covered(text: str, size: int, overlap: int) -> None:
    """No text is lost between chunks: every non-space stretch of the document lands in some chunk."""
    doc = Document("d", "d.md", text, "d")
    chunks = chunk_document(doc, ChunkerParams(chunk_size=size, overlap=overlap, whole_document=False))
    covered = [False] * len(text)
    for c in chunks:
        start = text.index(c.text, c.start)
        for i in range(start, start + len(c.text)):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())


SECTIONED = "# Router guide\n\n" + "\n\n".join(
    f"## Part {i}\n\n" + " ".join(f"step{i}_{j}" for j in range(25 + 7 * i)) for i in range(9)
)


@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (300, 40), (400, 60), (800, 120), (1000, 150)])
def test_a_chunk_never_ends_with_a_heading_line(size: int, overlap: int) -> None:
    """A heading opens the text under it, so the break falls before it, never after it."""
    doc = Document("guide", "corpus/guide.md", SECTIONED, "Router guide")
    chunks = chunk_document(doc, ChunkerParams(chunk_size=size, overlap=overlap, whole_document=False))
    assert len(chunks) > 2
    for c in chunks:
        last_line = c.text.rstrip().splitlines()[-1]
        assert not last_line.startswith("#"), (c.chunk_id, last_line)
