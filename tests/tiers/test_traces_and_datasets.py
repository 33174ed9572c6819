"""Retrieval spans in trace.jsonl, turned into a draft suite and annotated into one check accepts. The traced runs
are made in-process; the dataset and check commands are run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, MINI, run_cli, run_in_process


@pytest.mark.slow
def test_trace_to_dataset_to_valid_suite(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                          "quiet=true") == 0
    spans = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    cases = [json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()]
    assert len(spans) == len(cases) == 8
    for span, case in zip(spans, cases, strict=True):
        attrs = span["attributes"]
        assert span["name"] == "retrieval" and attrs["gen_ai.operation.name"] == "retrieval"
        assert attrs["nomad_eval.golden.id"] == case["id"]
        assert [d["id"] for d in attrs["gen_ai.retrieval.documents"]] == [r["chunk_id"] for r in case["retrieved"]]
        assert span["end_time_unix_nano"] >= span["start_time_unix_nano"]

    drafts = tmp_path / "drafts.jsonl"
    r = run_cli("tier=dataset", f"dataset.from_traces={run}", f"dataset.out={drafts}")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in drafts.read_text().splitlines()]
    cands = [json.loads(x) for x in (tmp_path / "drafts.jsonl.candidates").read_text().splitlines()]
    assert len(rows) == 8 and all(c["candidates"] for c in cands)
    assert [c["id"] for c in cands] == [r["id"] for r in rows]
    assert all(r["relevantDocIds"] == [] and "candidates" not in r for r in rows)  # suite format, to be annotated

    suite_dir = tmp_path / "goldens"
    suite_dir.mkdir()
    # Annotate: first candidate for each, except a refusal, a skip and one bad answer that is asked again.
    answers = "1\nr\ns\nx\n1\n1\n1\n1\n1,2\n"
    p = subprocess.run([sys.executable, "-m", "nomad_eval", "tier=dataset", f"dataset.annotate={drafts}",
                        f"dataset.out={suite_dir / 'annotated.jsonl'}", f"hydra.run.dir={tmp_path / 'h'}"],
                       input=answers, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    suite = [json.loads(x) for x in (suite_dir / "annotated.jsonl").read_text().splitlines()]
    assert len(suite) == 7 and sum(g["expectRefusal"] for g in suite) == 1
    assert "please answer with numbers" in p.stdout
    check = run_cli("tier=corpus", "action=check", f"data.corpus_dir={FIXTURES / 'corpus'}",
                    f"data.goldens_dir={suite_dir}", "suite=annotated", f"hydra.run.dir={tmp_path / 'c'}")
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_drafts_annotated_by_hand_pass_check(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                          "quiet=true") == 0
    drafts = tmp_path / "goldens" / "drafts.jsonl"
    assert run_in_process("tier=dataset", f"dataset.from_traces={run / 'trace.jsonl'}", f"dataset.out={drafts}",
                          f"paths.run_dir={tmp_path / 'd'}") == 0
    check = ("tier=corpus", "action=check", f"data.corpus_dir={FIXTURES / 'corpus'}",
             f"data.goldens_dir={drafts.parent}", "suite=drafts", f"hydra.run.dir={tmp_path / 'c'}")
    before = run_cli(*check)
    assert before.returncode == 2 and "no relevantDocIds" in before.stderr  # not annotated yet
    cands = {json.loads(x)["id"]: json.loads(x)["candidates"] for x in
             (drafts.parent / "drafts.jsonl.candidates").read_text().splitlines()}
    rows = [json.loads(x) for x in drafts.read_text().splitlines()]
    for r in rows:
        r["relevantDocIds"] = [cands[r["id"]][0]["doc_id"]]
    drafts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    after = run_cli(*check)
    assert after.returncode == 0, after.stderr


def test_a_multi_turn_trace_drafts_a_golden_with_its_history() -> None:
    from nomad_eval.data.traces import drafts_from_spans
    from nomad_eval.harness.trace import SpanClock, Tracer

    tracer = Tracer()
    history = [{"role": "user", "content": "My lantern is the Osprey L9."},
               {"role": "assistant", "content": "Noted: the Osprey L9."}]
    clock = SpanClock(1, 2)
    tracer.retrieval(clock, "How many AA cells does the Osprey L9 lantern take? (expanded)", [], 5, "eval", "g1",
                     rewritten="How many AA cells does the Osprey L9 lantern take?",
                     messages=[*history, {"role": "user", "content": "How many cells does it take?"}])
    tracer.retrieval(clock, "How long should it stand?", [], 5, "eval", "g2")  # a span without the conversation
    # The conversation may also arrive as JSON text with `parts`, as other OpenTelemetry producers write it.
    span = json.loads(json.dumps(tracer.spans[0]))
    span["attributes"]["gen_ai.input.messages"] = json.dumps(
        [{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
         for m in tracer.spans[0]["attributes"]["gen_ai.input.messages"]])
    drafts = drafts_from_spans([*tracer.spans, span])
    assert len(drafts) == 2  # the same conversation twice is one draft
    multi = next(d for d in drafts if d["turns"])
    assert multi["query"] == "How many cells does it take?" and multi["turns"] == history
    single = next(d for d in drafts if not d["turns"])
    assert single["query"] == "How long should it stand?"
