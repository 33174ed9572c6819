"""Whether what a served index returns is the corpus under test: each passage is `current` (its text is in the
current version of a document), `stale` (its document exists, but the text is in no current version of any
document: an old version is still served) or `foreign` (no document of the corpus holds it, nor its id).

Texts are compared with their whitespace collapsed: a store or an app may re-flow a passage, never change a word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from nomad_eval.data.corpus import Document
from nomad_eval.metrics.aggregate import wilson
from nomad_eval.records.sections import ParitySummary, Share

Standing = Literal["current", "stale", "foreign"]
METRIC = "app.current_context_rate"


def normalized(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class CorpusText:
    """The current documents' texts, normalised, by document id."""

    docs: Mapping[str, str]

    @classmethod
    def of(cls, documents: Iterable[Document]) -> CorpusText:
        return cls({d.doc_id: normalized(d.text) for d in documents})

    def in_document(self, doc_id: str, text: str) -> bool:
        """Whether the (normalised) text is part of the current version of `doc_id`."""
        return doc_id in self.docs and text in self.docs[doc_id]

    def standing(self, doc_id: str | None, text: str) -> Standing:
        t = normalized(text)
        if doc_id is not None and self.in_document(doc_id, t):
            return "current"
        if any(t in body for body in self.docs.values()):  # current text under another id is still current
            return "current"
        return "stale" if doc_id in self.docs else "foreign"


@dataclass
class Parity:
    """The served passages counted by standing, with the documents whose old versions were served."""

    counts: Counter[str] = field(default_factory=Counter)
    stale_documents: Counter[str] = field(default_factory=Counter)
    foreign_documents: Counter[str] = field(default_factory=Counter)  # the ids they came with ("" for none)

    @property
    def passages(self) -> int:
        return sum(self.counts.values())

    def add(self, corpus: CorpusText, doc_id: str | None, text: str) -> Standing:
        s = corpus.standing(doc_id, text)
        self.counts[s] += 1
        if s == "stale":
            self.stale_documents[str(doc_id)] += 1
        elif s == "foreign":
            self.foreign_documents[doc_id or ""] += 1
        return s

    def share(self, standing: Standing) -> Share:
        """The share of passages with `standing`, its n and its Wilson 95% interval (None when nothing served)."""
        n, k = self.passages, self.counts[standing]
        low, high = wilson(k, n)
        return Share(value=k / n if n else None, count=k, n=n, low=low, high=high, method="wilson")

    def summary(self) -> ParitySummary:
        return ParitySummary(passages=self.passages, current=self.share("current"), stale=self.share("stale"),
                             foreign=self.share("foreign"), stale_documents=dict(sorted(self.stale_documents.items())),
                             foreign_documents=dict(sorted(self.foreign_documents.items())))

    def warnings(self) -> list[str]:
        out = []
        if self.stale_documents:
            named = ", ".join(f"{d} ({n})" for d, n in sorted(self.stale_documents.items()))
            out.append(f"the app served {self.counts['stale']} passage(s) from old versions of: {named}; "
                       "re-index them")
        if self.foreign_documents:
            named = ", ".join(f"{d or '(no id)'} ({n})" for d, n in sorted(self.foreign_documents.items()))
            out.append(f"the app served {self.counts['foreign']} passage(s) no document of the corpus holds: {named}")
        return out


def served_parity(corpus: CorpusText, passages: Iterable[tuple[str | None, str]]) -> Parity:
    parity = Parity()
    for doc_id, text in passages:
        parity.add(corpus, doc_id, text)
    return parity
