"""The same-document penalty picks exactly what the plain greedy scan picks, ties and float scores included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nomad_eval.rag.rerank import Candidate, Scored, order, penalise_same_doc


def greedy_scan(scored: list[tuple[Candidate, float]], penalty: float) -> list[Scored]:
    """The definition: at every pick, scan all remaining candidates for the highest penalised score."""
    pool = order(scored)
    picked: list[Scored] = []
    per_doc: dict[str, int] = {}
    while pool:
        best_i, best_s = 0, float("-inf")
        for i, (c, s) in enumerate(pool):
            adj = s - penalty * per_doc.get(c.doc_id, 0)
            if adj > best_s:
                best_i, best_s = i, adj
        c, _ = pool.pop(best_i)
        per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
        picked.append(Scored(c, best_s))
    return picked


# Few distinct scores and documents, so ties (equal scores, equal penalised scores) are common.
candidates = st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.9])),
                      max_size=40)


@settings(max_examples=300, derandomize=True)
@given(candidates, st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.35]))
def test_heap_pick_equals_the_greedy_scan(rows: list[tuple[int, float]], penalty: float) -> None:
    scored = [(Candidate(f"d{d}#{i}", f"d{d}", "", "", s), s) for i, (d, s) in enumerate(rows)]
    got, want = penalise_same_doc(scored, penalty), greedy_scan(scored, penalty)
    assert [(x.candidate.chunk_id, x.final_score) for x in got] == [(x.candidate.chunk_id, x.final_score)
                                                                    for x in want]


def test_a_penalty_demotes_a_second_chunk_of_the_same_document() -> None:
    a1, a2, b1 = (Candidate(i, i[0], "", "", 0.0) for i in ("a1", "a2", "b1"))
    out = penalise_same_doc([(a1, 0.9), (a2, 0.85), (b1, 0.8)], 0.1)
    assert [x.candidate.chunk_id for x in out] == ["a1", "b1", "a2"]
    assert [round(x.final_score, 6) for x in out] == [0.9, 0.8, 0.75]
