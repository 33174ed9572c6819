"""Upstream's miss rule on the console: answerable questions with recall@k < 1, counted always, listed under verbose."""

from __future__ import annotations

import pytest

from nomad_eval.records import Hit, RetrievalCase, values
from nomad_eval.report.console_view import misses, print_misses


def case(qid: str, recall: float | None, refusal: bool = False) -> RetrievalCase:
    hits = [Hit(rank=1, doc_id="lead-acid", chunk_id="lead-acid#0", score=None, final_score=0.61),
            Hit(rank=2, doc_id="lithium", chunk_id="lithium#0", score=None, final_score=0.52)]
    return RetrievalCase(id=qid, expect_refusal=refusal, relevant_doc_ids=() if refusal else ("rota", "lithium"),
                         metrics=values({"recall@3": recall, "recall@5": recall}), retrieved=tuple(hits))


CASES = [case("full", 1.0), case("half", 0.5), case("none", 0.0), case("unscored", None),
         case("decline", None, refusal=True)]


def test_a_miss_is_recall_below_one_not_only_nothing_found(capsys: pytest.CaptureFixture[str]) -> None:
    assert [c.id for c in misses(CASES, 5)] == ["half", "none"]  # a partial miss counts, as upstream counts it
    print_misses(CASES, 5, verbose=False)
    out = capsys.readouterr().out
    assert "2 of 4 answerable questions missed at k=5 (recall@5 < 1)" in out
    assert "verbose=true lists them" in out and "half" not in out
    print_misses(CASES, 10, verbose=True)  # no recall@10 measured: the smallest cutoff, as upstream falls back
    out = capsys.readouterr().out
    assert "2 of 4 answerable questions missed at k=3" in out
    assert "miss half: wanted rota, lithium; retrieved lead-acid(0.610), lithium(0.520)" in out
