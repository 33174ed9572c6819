"""Distractor documents: real passages that compete with the corpus for the top ranks (the hard tier)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path

from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.data.beir import load_beir_corpus
from nomad_eval.data.corpus import Document, load_markdown_dir

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _shift(match: re.Match[str], k: int) -> str:
    text = match.group(0)
    if "." in text:
        return f"{float(text) * (1 + 0.3 * k):.{len(text.split('.')[1])}f}"
    return str(int(text) + k * max(1, int(text) // 3))


def revisions(corpus: list[Document], copies: int = 3) -> list[Document]:
    """Near-domain distractors: superseded drafts of every corpus document with every figure changed.

    A real knowledge base keeps stale versions beside the current one; they share nearly all their words
    with the right answer, so unlike an off-domain set they do compete for the top ranks.
    """
    out = []
    for d in corpus:
        for k in range(1, copies + 1):
            text = _NUMBER.sub(partial(_shift, k=k), d.text)
            out.append(Document(f"revisions:{d.doc_id}-r{k}", f"{d.path}#r{k}",
                                f"Superseded draft {k} of: {d.title}\n\n{text}", d.title, distractor=True))
    return out


def load_distractors(name: str, path: Path, known: list[str] | None = None) -> list[Document]:
    """A BEIR folder (corpus.jsonl) or a folder of *.md; ids get a `<name>:` prefix so none collides."""
    if (path / "corpus.jsonl").is_file():
        docs = load_beir_corpus(path)
    elif path.is_dir():
        docs = load_markdown_dir(path)
    else:
        names = ", ".join(known or [])
        raise InvalidInput([Defect(str(path), None, f"distractor set {name!r}: not a BEIR folder or a folder of "
                                                    f"*.md; store.distractors takes a path or one of: {names}")])
    prefix = Path(name).name if "/" in name else name
    return [replace(d, doc_id=f"{prefix}:{d.doc_id}", distractor=True) for d in docs]


# Sets made from the corpus itself, by name; any other name is a folder, or a name in distractor_sets.
GENERATED: dict[str, Callable[[list[Document]], list[Document]]] = {"revisions": revisions}


def distractor_set(name: str, corpus: list[Document], sets: Mapping[str, object]) -> list[Document]:
    if name in GENERATED:
        return GENERATED[name](corpus)
    return load_distractors(name, Path(str(sets.get(name, name))), [*GENERATED, *sets])
