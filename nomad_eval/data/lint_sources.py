"""Lint: a mustInclude pattern that none of its golden's relevant documents says.

Even the oracle answer, written from exactly those documents, then fails unless the model rephrases its source,
which is the defect NOMAD's own core suite ships (`16 drops` against a document that wraps the line as
"16\\ndrops"). A pattern is allowed to fail on a computed answer (arithmetic over a figure), so this is a warning.
"""

from __future__ import annotations

import difflib
import re

from nomad_eval.base.patterns import TIMEOUT_S, PatternError, compile_pattern, shown
from nomad_eval.data.anchors import first_match
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden

# What may stand between two words of a document where the pattern has one space: a line break, several
# spaces, markdown emphasis ("**16** drops").
_GAP = r"[\s*_]"
_WORD = re.compile(r"\S+")


def source_messages(g: Golden, by_id: dict[str, Document]) -> list[str]:
    """One message per mustInclude pattern that matches none of the golden's relevant documents."""
    docs = [by_id[d] for d in g.relevant_doc_ids if d in by_id]
    if not docs:
        return []  # a refusal golden, or ids the corpus lacks (the golden check reports those)
    out = []
    for p in g.must_include:
        if any(first_match(p, d.text) is not None for d in docs):
            continue  # found, or too slow to tell (the run reports a pattern that times out)
        names = ", ".join(d.doc_id for d in docs)
        wrapped = _wrapped(p, docs)
        if wrapped is not None:
            out.append(f"mustInclude {shown(p)} matches none of its relevant documents ({names}): the text is "
                       f"{wrapped!r}, broken across lines or markup; write \\s+ between the words")
        else:
            near = _nearest(p, docs)
            hint = f": the nearest text is {near!r}" if near else ""
            out.append(f"mustInclude {shown(p)} matches none of its relevant documents ({names}){hint}; even an "
                       "answer quoting them fails (fine only when the answer is computed from them)")
    return out


def _wrapped(pattern: str, docs: list[Document]) -> str | None:
    """The document text the pattern matches once a space may also be a line break or markup."""
    loose = pattern.replace(" ?", f"{_GAP}*").replace(" ", f"{_GAP}+")
    if loose == pattern:
        return None
    for d in docs:
        try:
            m = compile_pattern(loose).search(d.text, timeout=TIMEOUT_S)
        except (PatternError, TimeoutError):
            return None  # the plain message still names the pattern
        if m:
            return str(m.group(0))
    return None


def _literal(pattern: str) -> str:
    """The pattern's first top-level branch with regex syntax removed, as words to look for."""
    branch = re.split(r"(?<!\\)\|", pattern)[0]
    text = re.sub(r"\(\?<?[!=][^)]*\)", " ", branch)  # lookarounds match no text of their own
    text = re.sub(r"\(\?:|\\[bBdDsSwW]|[\\^$.*+?()\[\]{}|]", " ", text)
    return " ".join(text.split())


def _nearest(pattern: str, docs: list[Document]) -> str | None:
    """The run of document words most like the pattern's literal words (difflib's ratio), for the message."""
    target = _literal(pattern).lower()
    if not target:
        return None
    width = max(1, len(target.split()))
    best, best_ratio = None, 0.0
    for d in docs:
        words = _WORD.findall(d.text)
        for i in range(max(1, len(words) - width + 1)):
            window = " ".join(words[i:i + width])
            ratio = difflib.SequenceMatcher(None, target, window.lower()).ratio()
            if ratio > best_ratio:
                best, best_ratio = window, ratio
    return best if best_ratio >= 0.5 else None
