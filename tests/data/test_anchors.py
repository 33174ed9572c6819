"""Evidence anchors: where a golden's answer is in the corpus, and what became of it in a later corpus."""

from __future__ import annotations

import pytest

from nomad_eval.data.anchors import anchor_goldens, doc_hash, reanchor_all, sentence, unanchored
from nomad_eval.data.corpus import Document
from nomad_eval.data.golden import Golden

SYRUP = ("# Feeding\n\nIn spring feed thin syrup. A full-size colony needs about 18 kg of stores for 1.5 winters. "
         "Never feed brown sugar.\n")
SWARM = "# Swarms\n\nMove the old hive 1 metre to one side. After 7 days move it back.\n"
OTHER = "# Honey\n\nStrain honey through a 200 micron filter.\n"


def _docs(**texts: str) -> list[Document]:
    return [Document(k.replace("_", "-"), f"{k}.md", v) for k, v in texts.items()]


def _golden(gid: str, docs: list[str], *patterns: str) -> Golden:
    return Golden.model_validate({"id": gid, "query": f"question {gid}?", "relevantDocIds": docs,
                                  "mustInclude": list(patterns)})


GOLDENS = [_golden("feed", ["syrup"], r"\b18 kg"), _golden("swarm", ["swarm"], r"\b1 metre", r"after 7 days"),
           Golden.model_validate({"id": "no", "query": "surf wax?", "relevantDocIds": [], "expectRefusal": True})]


def _status(before: list[Document], after: list[Document], goldens: list[Golden] = GOLDENS
            ) -> dict[str, tuple[str, str]]:
    base, run = anchor_goldens(GOLDENS, before), anchor_goldens(goldens, after)
    base_docs = {d.doc_id: doc_hash(d.text) for d in before}
    run_docs = {d.doc_id: doc_hash(d.text) for d in after}
    return {k: (e.status, e.message) for k, e in reanchor_all(base, run, base_docs, run_docs).items()}


def test_an_anchor_records_document_hash_sentence_and_span() -> None:
    anchors = anchor_goldens(GOLDENS, _docs(syrup=SYRUP, swarm=SWARM, other=OTHER))
    assert set(anchors) == {"feed", "swarm"}  # a refusal golden has no evidence to anchor
    a = anchors["feed"].patterns[0].found[0]
    assert (a.doc, a.match, a.relevant) == ("syrup", "18 kg", True)
    assert SYRUP[a.start:a.end] == "18 kg"
    # The sentence, not cut at the decimal point of "1.5".
    assert a.quote == "A full-size colony needs about 18 kg of stores for 1.5 winters."
    assert sentence("line one\n- item 12 here\nnext", 14, 16) == "item 12 here"


def test_an_unchanged_corpus_is_intact_and_a_pattern_found_nowhere_is_named() -> None:
    docs = _docs(syrup=SYRUP, swarm=SWARM, other=OTHER)
    assert {k: s for k, (s, _) in _status(docs, docs).items()} == {"feed": "intact", "swarm": "intact"}
    bad = anchor_goldens([_golden("bad", ["other"], r"\b99 kg")], docs)
    assert unanchored(bad) == [r"bad: mustInclude '\b99 kg' matches none of its relevant documents (other)"]


def test_a_changed_value_is_gone_and_names_the_document() -> None:
    before = _docs(syrup=SYRUP, swarm=SWARM)
    after = _docs(syrup=SYRUP.replace("18 kg", "22 kg"), swarm=SWARM)
    status, message = _status(before, after)["feed"]
    assert status == "gone"
    assert message == 'feed: its answer "18 kg" is in no document any more (syrup changed): update or retire the golden'


def test_the_same_fact_elsewhere_in_its_document_is_moved() -> None:
    before = _docs(syrup=SYRUP, swarm=SWARM)
    after = _docs(syrup="# Feeding\n\nA new first line.\n\n" + SYRUP, swarm=SWARM)
    assert _status(before, after)["feed"][0] == "moved"


def test_a_renamed_document_is_found_by_its_quote_and_a_split_one_remaps_to_both_parts() -> None:
    before = _docs(syrup=SYRUP, swarm=SWARM, other=OTHER)
    renamed = _docs(feeding_syrup=SYRUP, swarm=SWARM, other=OTHER)
    status, message = _status(before, renamed)["feed"]
    assert status == "relocated" and "remap relevantDocIds ['syrup'] → ['feeding-syrup']" in message
    assert "(syrup removed)" in message
    split = _docs(syrup=SYRUP, swarm_move="# Move\n\nMove the old hive 1 metre to one side.\n",
                  swarm_return="# Return\n\nAfter 7 days move it back.\n", other=OTHER)
    status, message = _status(before, split)["swarm"]
    assert status == "relocated" and "['swarm'] → ['swarm-move', 'swarm-return']" in message


def test_evidence_in_several_other_documents_is_ambiguous() -> None:
    before = _docs(syrup=SYRUP, swarm=SWARM)
    after = _docs(syrup="# Feeding\n\nFeed syrup.\n", a="Colonies want 18 kg in winter.",
                  b="Some say 18 kg of stores.", swarm=SWARM)
    assert _status(before, after)["feed"][0] == "ambiguous"


def test_a_golden_the_suite_changed_is_judged_on_the_run_alone() -> None:
    docs = _docs(syrup=SYRUP, swarm=SWARM, other=OTHER)
    moved = [_golden("feed", ["other"], r"\b18 kg"), *GOLDENS[1:]]  # the author pointed it elsewhere on purpose
    # Its documents are the baseline's, so its pattern not matching there is the suite's defect, not a change.
    assert _status(docs, docs, moved)["feed"][0] == "unanchored"


def test_a_baseline_without_anchors_anchors_on_the_run() -> None:
    before = _docs(syrup=SYRUP, swarm=SWARM, other=OTHER)
    after = _docs(feeding=SYRUP, swarm=SWARM, other=OTHER)
    run = anchor_goldens(GOLDENS, after)
    found = reanchor_all(None, run, {d.doc_id: doc_hash(d.text) for d in before},
                         {d.doc_id: doc_hash(d.text) for d in after})
    assert found["swarm"].status == "intact"
    assert found["feed"].status == "relocated" and found["feed"].remap == (("syrup",), ("feeding",))


def test_promote_names_a_pattern_its_documents_never_say(capsys: pytest.CaptureFixture[str]) -> None:
    from nomad_eval.gate.promotion import name_unanchored
    from nomad_eval.report.schema import Report, Subject

    docs = _docs(syrup=SYRUP, other=OTHER)
    anchors = anchor_goldens([_golden("bad", ["other"], r"\b99 kg"), GOLDENS[0]], docs)
    name_unanchored(Report(tier="retrieval", subject=Subject(anchors=anchors)))
    out = capsys.readouterr().out
    assert "bad: mustInclude '\\b99 kg' matches none of its relevant documents (other)" in out and "feed" not in out
