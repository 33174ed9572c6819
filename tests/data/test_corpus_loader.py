from __future__ import annotations

from pathlib import Path

import pytest

from nomad_eval.base.errors import InvalidInput
from nomad_eval.data.corpus import load_markdown_dir


def test_loads_sorted_with_titles(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Bee\ntext")
    (tmp_path / "a.md").write_text("no title here")
    docs = load_markdown_dir(tmp_path)
    assert [(d.doc_id, d.title) for d in docs] == [("a", "a"), ("b", "Bee")]


@pytest.mark.parametrize(("content", "expected"), [(b"", "empty document"), (b"ab\x00c", "binary"),
                                                   (b"ok\n\xc3\x28", "not UTF-8")])
def test_bad_documents_are_named(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "bad.md").write_bytes(content)
    with pytest.raises(InvalidInput) as exc:
        load_markdown_dir(tmp_path)
    assert "bad.md" in str(exc.value) and expected in str(exc.value)


def test_empty_or_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no \\*.md documents"):
        load_markdown_dir(tmp_path)
    with pytest.raises(InvalidInput, match="does not exist"):
        load_markdown_dir(tmp_path / "nope")


def test_documents_in_subfolders_are_read_with_their_relative_path_as_id(tmp_path: Path) -> None:
    (tmp_path / "radio").mkdir()
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / "top.md").write_text("# Top\nbody")
    (tmp_path / "radio" / "nvis.md").write_text("# NVIS\nnear vertical incidence")
    (tmp_path / ".obsidian" / "workspace.md").write_text("# editor state, not a document")
    docs = load_markdown_dir(tmp_path)
    assert [d.doc_id for d in docs] == ["radio/nvis", "top"]
    assert docs[0].title == "NVIS"
