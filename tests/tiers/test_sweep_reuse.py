"""What a job leaves for the next in one process changes no byte: scores.json and the ranking's questions."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from nomad_eval.base.atomic import read_jsonl
from nomad_eval.cli.entry import run_tier
from nomad_eval.core.questions import questions_from_cases
from nomad_eval.report import sweep_rank
from nomad_eval.tiers import retrieval
from tests.conftest import MINI


def test_scores_json_and_remembered_questions_equal_what_the_files_say(make_cfg: Callable[..., DictConfig],
                                                                        tmp_path: Path) -> None:
    runs = []
    for t in (0.2, 0.3):
        cfg = make_cfg(*MINI, f"threshold={t}", f"paths.run_dir={tmp_path / str(t)}")
        assert run_tier(cfg) == 0
        runs.append(tmp_path / str(t))
    for run in runs:
        text = (run / "scores.json").read_text()
        scores = json.loads(text)
        assert text == json.dumps(scores)  # the spliced file is json.dumps byte for byte
        # The second run's every-chunk side is the kept one (the splice was taken), and splicing equals dumping.
        kept = next(iter(retrieval._every_chunk.values()))
        assert scores["raw"] == {"relevant": kept[0], "irrelevant": kept[1]}
        assert retrieval.scores_json(scores) == json.dumps(scores)
        loaded = sweep_rank._load(run)
        assert loaded is not None
        from_file = questions_from_cases(read_jsonl(run / "cases.jsonl"))
        assert loaded[1] == from_file
        assert loaded[1] is sweep_rank._remembered[str((run / "cases.jsonl").resolve())][1]  # not read back
    # A cases file changed since is read again.
    cases = read_jsonl(runs[0] / "cases.jsonl")[:1]
    (runs[0] / "cases.jsonl").write_text(json.dumps(cases[0]) + "\n")
    loaded = sweep_rank._load(runs[0])
    assert loaded is not None and [q.id for q in loaded[1]] == [cases[0]["id"]]


def test_a_run_after_another_writes_what_a_fresh_process_would(make_cfg: Callable[..., DictConfig],
                                                                tmp_path: Path) -> None:
    # The second run takes its case rows (and their lines and parquet rows), documents, chunks, fingerprint,
    # suite hash and glossary from the first; with every one of those forgotten it must write the same bytes.
    import polars as pl

    from nomad_eval.harness import runtime
    from nomad_eval.rag import glossary, rerank
    from nomad_eval.tiers import retrieval_cases

    def run(t: float, name: str) -> Path:
        out = tmp_path / name
        assert run_tier(make_cfg(*MINI, f"threshold={t}", f"paths.run_dir={out}")) == 0
        return out

    run(0.2, "first")
    warm = run(0.3, "warm")
    assert len(retrieval_cases._cases) > 0
    shared_rows = len(retrieval_cases._cases)
    for kept in (runtime._documents, runtime._chunked, runtime._fingerprints, runtime._golden_hashes,
                 glossary._parsed):
        assert len(kept) > 0
        kept.clear()
    retrieval_cases._cases.clear()
    rerank.query_terms.cache_clear()
    rerank.keywords.cache_clear()
    fresh = run(0.3, "fresh")
    assert shared_rows > 0
    for name in ("cases.jsonl", "run.trec", "qrels.trec", "scores.json"):  # report.md holds timings
        assert (warm / name).read_bytes() == (fresh / name).read_bytes(), name
    assert pl.read_parquet(warm / "cases.parquet").equals(pl.read_parquet(fresh / "cases.parquet"))
    w, f = (json.loads((d / "report.json").read_text()) for d in (warm, fresh))
    for key in ("identity", "metrics", "intervals", "metrics_by_tag", "separation", "counts", "warnings"):
        assert w[key] == f[key], key
    # cases.jsonl is base/atomic.py's write_jsonl encoding of its rows.
    rows = read_jsonl(warm / "cases.jsonl")
    assert (warm / "cases.jsonl").read_text() == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
