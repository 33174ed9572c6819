"""Distractor documents: real passages that compete with the corpus for the top ranks (the hard tier)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nomad_eval.data.beir import load_beir_corpus
from nomad_eval.data.corpus import Document, load_markdown_dir
from nomad_eval.errors import Defect, InvalidInput


def load_distractors(name: str, path: Path) -> list[Document]:
    """A BEIR folder (corpus.jsonl) or a folder of *.md; ids get a `<name>:` prefix so none collides."""
    if (path / "corpus.jsonl").is_file():
        docs = load_beir_corpus(path)
    elif path.is_dir():
        docs = load_markdown_dir(path)
    else:
        raise InvalidInput([Defect(str(path), None, f"distractor set {name!r}: not a BEIR folder or a folder of "
                                                    "*.md (set store.distractors to a name in distractor_sets "
                                                    "or to a path)")])
    prefix = Path(name).name if "/" in name else name
    return [replace(d, doc_id=f"{prefix}:{d.doc_id}", distractor=True) for d in docs]
