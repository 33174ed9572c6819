"""A mock mode=all run on a suite with planted failures labels each with its cause, and the report counts them.

The suite (tests/fixtures/causes): `c-miss` asks in English about a document written in Finnish, which MiniLM
ranks below the cosine threshold (a retrieval miss); `c-budget`'s only passage is one ~750-character chunk that a
tiny passage budget (`tier.chunk_share=0.015`, about 115 tokens) cannot hold; `c-beyond` wants "1:3" where the
passage says "one part white vinegar to three parts water", which the extractive mock cannot produce;
`c-refusal` has no answer in the corpus, yet retrieval returns a passage above the threshold and the mock
echoes it. `c-pass` and `c-lantern` pass in e2e and oracle.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.base.runfolder import seal
from nomad_eval.cli.entry import run_tier
from nomad_eval.core.causes import LABELS
from nomad_eval.tiers.compare import compare_run
from tests.conftest import FIXTURES, run_cli
from tests.report.test_html_in_browser import ARTIFACTS, CHROMIUM, chromium
from tests.servers import openai_compat
from tests.typed_config import typed

CAUSES = [f"data.corpus_dir={FIXTURES / 'causes' / 'corpus'}", f"data.goldens_dir={FIXTURES / 'causes' / 'goldens'}",
          "suite=causes", "tier=generation", "model=mock", "mode=all"]
TINY_BUDGET = "tier.chunk_share=0.015"

EXPECTED = {
    "e2e": {"c-miss": "retrieval_miss", "c-budget": "dropped_by_budget", "c-beyond": "beyond_the_model",
            "c-refusal": "missed_refusal"},
    # The oracle gets the golden's own passages: the budget still cuts c-budget's, and c-beyond still fails.
    "oracle": {"c-budget": "dropped_by_budget", "c-beyond": "beyond_the_model"},
    # Without passages the mock declines: every answerable question fails for want of context.
    "noretrieval": {q: "no_context" for q in ("c-pass", "c-miss", "c-budget", "c-beyond", "c-lantern")},
}


def run(cfg: DictConfig) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    assert run_tier(cfg) == 0
    out = Path(cfg.paths.run_dir)
    return json.loads((out / "report.json").read_text()), [json.loads(x) for x in
                                                             (out / "cases.jsonl").read_text().splitlines()]


def test_planted_failures_get_their_causes_and_the_report_counts_them(make_cfg: Callable[..., DictConfig]) -> None:
    cfg = make_cfg(*CAUSES, TINY_BUDGET, "repeats=3")  # repeats that agree: one cause per question, 3 per case
    report, cases = run(cfg)
    assert report["counts"]["repeats"] == 3 and len(cases) == 6 * 3 * 3
    labels = {(c["mode"], c["id"]): c["cause"] for c in cases}
    for mode, expected in EXPECTED.items():
        got = {qid: label for (m, qid), label in labels.items() if m == mode and label is not None}
        assert got == expected, mode
    # Every failed case has a label and evidence; every passing one has neither.
    for c in cases:
        assert (c["cause"] is not None) == (c["passed"] is False), c["id"]
        assert (c["cause_evidence"] is not None) == (c["cause"] is not None)
    by_key = {(c["mode"], c["id"]): c for c in cases}
    assert "sauna-ohje" in by_key[("e2e", "c-miss")]["cause_evidence"]
    assert "oracle pass" in by_key[("e2e", "c-miss")]["cause_evidence"]
    assert "tent-guying#0 (rank 1)" in by_key[("e2e", "c-budget")]["cause_evidence"]
    assert "oracle failed too" in by_key[("e2e", "c-beyond")]["cause_evidence"]

    # The counts in report.json equal the labels in cases.jsonl: `count` one per question (its repeats agree),
    # `cases` one per case record.
    causes = report["details"]["causes"]
    assert causes["precedence"] == list(LABELS)
    for mode in ("e2e", "oracle", "noretrieval"):
        entry = causes["by_mode"][mode]
        mode_cases = [c for c in cases if c["mode"] == mode]
        per_case = Counter(c["cause"] for c in mode_cases if c["cause"])
        per_question = Counter(c["cause"] for c in {c["id"]: c for c in mode_cases}.values() if c["cause"])
        assert {k: v["count"] for k, v in entry["labels"].items() if v["count"]} == dict(per_question), mode
        assert {k: v["cases"] for k, v in entry["labels"].items() if v["cases"]} == dict(per_case), mode
        assert dict(per_case) == {k: 3 * v for k, v in per_question.items()}
        assert entry["failed"] == sum(per_question.values()) == len(EXPECTED[mode])
        assert entry["failed_cases"] == sum(per_case.values()) == sum(1 for c in mode_cases if c["passed"] is False)
        assert (entry["questions"], entry["cases"]) == (6, len(mode_cases))
        for row in entry["labels"].values():
            assert row["n"] == entry["failed"]
            assert row["low"] <= row["share"] <= row["high"]
    md = (Path(cfg.paths.run_dir) / "report.md").read_text()
    assert "## Failure causes" in md and "retrieval miss" in md
    page = (Path(cfg.paths.run_dir) / "report.html").read_text()
    assert "id='cause'" in page and "data-cause='retrieval_miss'" in page


def test_compare_lists_the_questions_whose_cause_changed(make_cfg: Callable[..., DictConfig], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    base_cfg = make_cfg(*CAUSES, TINY_BUDGET, f"paths.run_dir={tmp_path / 'tiny'}")
    run(base_cfg)
    run_cfg = make_cfg(*CAUSES, f"paths.run_dir={tmp_path / 'roomy'}")  # the default budget holds c-budget's passage
    _, cases = run(run_cfg)
    assert {(c["mode"], c["id"]): c["cause"] for c in cases}[("e2e", "c-budget")] is None
    capsys.readouterr()
    compare_run(tmp_path / "roomy", typed(run_cfg), tmp_path / "tiny")
    out = capsys.readouterr().out
    assert "failure causes changed for 2 question(s)" in out
    assert "e2e:c-budget: dropped_by_budget → —" in out and "oracle:c-budget: dropped_by_budget → —" in out
    assert "e2e:c-miss" not in out  # unchanged questions are not listed

    # A baseline written before causes existed: compare says so instead of inventing changes.
    old = tmp_path / "tiny" / "cases.jsonl"
    rows = [{k: v for k, v in json.loads(x).items() if k not in ("cause", "cause_evidence")}
            for x in old.read_text().splitlines()]
    old.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seal(old.parent)  # as such an older run would have left it (an edited folder is refused)
    compare_run(tmp_path / "roomy", typed(run_cfg), tmp_path / "tiny")
    assert "the baseline carries no failure causes" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_html_table_filters_by_cause_in_a_browser(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    cfg = make_cfg(*CAUSES, TINY_BUDGET, "repeats=3")
    _, cases = run(cfg)
    page = Path(cfg.paths.run_dir) / "report.html"
    html = page.read_text()
    assert "<script src=" not in html and "<link" not in html  # self-contained: nothing fetched to view it
    for label, questions in (("dropped_by_budget", 2), ("no_context", 5), ("retrieval_miss", 1)):
        expected = 3 * questions  # a row per case: three repeats each
        assert sum(c["cause"] == label for c in cases) == expected
        dom = chromium(tmp_path, f"file://{page}#cause={label}", "--dump-dom")
        shown = re.search(r'<span id="shown">(\d+)</span>', dom)
        assert shown and int(shown.group(1)) == expected, label
        rows = re.findall(r'<tr class="[^"]*" data-cause="([^"]*)"( style="display: none;")?>', dom)
        assert len(rows) == len(cases)
        assert sorted(c for c, hidden in rows if not hidden) == [label] * expected
    ARTIFACTS.mkdir(exist_ok=True)
    chromium(tmp_path, f"file://{page}#cause=dropped_by_budget", f"--screenshot={ARTIFACTS / 'failure-causes.png'}",
             "--window-size=1200,2600")
    assert (ARTIFACTS / "failure-causes.png").stat().st_size > 20_000


def scripted(body: dict[str, Any]) -> str:
    """A model that fails each question its own way: declines, invents a figure, or flips with the seed."""
    last = body["messages"][-1]["content"]
    if last.startswith("Rewrite"):
        return last.rsplit("Question:", 1)[-1].strip()
    if body["max_tokens"] == 1:
        return "ok"
    question = last.rsplit("Question:", 1)[-1]
    if "AA cells" in question:
        return "It takes 12 AA cells."          # 12 is in no context: an unsupported claim
    if "ratio" in question:
        return "1:3" if body["seed"] == 0 else "One part to three."  # flips across repeats
    return "I don't know."                      # declines everything else, passage or not


def test_a_scripted_model_shows_refusals_inventions_and_flips(make_cfg: Callable[..., DictConfig]) -> None:
    with openai_compat.serve("scripted", scripted) as url:
        cfg = make_cfg(*CAUSES, "model=openai", "model.name=scripted", f"model.base_url={url}", "repeats=2",
                       "cache=false")
        report, cases = run(cfg)
    labels = {f"{c['mode']}:{c['id']}": c["cause"] for c in cases}
    assert {k: v for k, v in labels.items() if v} == {
        "e2e:c-pass": "wrong_refusal", "oracle:c-pass": "wrong_refusal", "noretrieval:c-pass": "no_context",
        "e2e:c-miss": "retrieval_miss", "oracle:c-miss": "wrong_refusal", "noretrieval:c-miss": "no_context",
        "e2e:c-budget": "wrong_refusal", "oracle:c-budget": "wrong_refusal", "noretrieval:c-budget": "no_context",
        "e2e:c-beyond": "unstable", "oracle:c-beyond": "unstable", "noretrieval:c-beyond": "unstable",
        "e2e:c-lantern": "unsupported_claim", "oracle:c-lantern": "unsupported_claim",
        "noretrieval:c-lantern": "unsupported_claim",
    }
    lantern = next(c for c in cases if c["id"] == "c-lantern" and c["mode"] == "e2e")
    assert lantern["unsupported_numbers"] == [12.0] and "states 12" in lantern["cause_evidence"]
    e2e = report["details"]["causes"]["by_mode"]["e2e"]
    assert e2e["failed"] == 5 and e2e["questions"] == 6  # the refusal golden passes: the model declines it
    assert {k: v["count"] for k, v in e2e["labels"].items() if v["count"]} == \
        dict(Counter(labels[k] for k in labels if k.startswith("e2e:") and labels[k]))


def test_without_an_oracle_run_the_cause_says_so(make_cfg: Callable[..., DictConfig]) -> None:
    _, cases = run(make_cfg(*CAUSES, "mode=e2e"))
    beyond = next(c for c in cases if c["id"] == "c-beyond")
    assert beyond["cause"] == "injected_not_used" and "oracle not run" in beyond["cause_evidence"]


@pytest.mark.slow
def test_a_document_the_corpus_lost_is_a_retrieval_miss_and_a_typo_is_refused(
        make_cfg: Callable[..., DictConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    goldens = tmp_path / "goldens"
    goldens.mkdir()
    lost = {"id": "c-lost", "query": "What torque does the Zephyr Q8 winch bolt take?", "turns": [],
            "relevantDocIds": ["zephyr-winch"], "mustInclude": ["45 Nm"], "mustNotInclude": [],
            "expectRefusal": False, "tags": []}
    suite = (FIXTURES / "causes" / "goldens" / "causes.jsonl").read_text().rstrip("\n") + "\n" + json.dumps(lost)
    (goldens / "causes.jsonl").write_text(suite + "\n")
    # A document no baseline knew either is a typo: refused at load, naming file, line and value (exit 2).
    with pytest.raises(SystemExit) as typo:
        run_tier(make_cfg(*CAUSES, f"data.goldens_dir={goldens}", "repeats=1", f"paths.baselines_dir={tmp_path}"))
    assert typo.value.code == 2 and "causes.jsonl:8 [c-lost]: unknown doc id 'zephyr-winch'" in capsys.readouterr().err
    # One a baseline measured is a change of the knowledge base: the run goes on and measures it as what it is.
    known = tmp_path / "b" / "0123456789abcdef" / "generation-all.json"
    known.parent.mkdir(parents=True)
    known.write_text(json.dumps({"report": {"subject": {"documents": {"zephyr-winch": "0" * 12}}}}))
    cfg = make_cfg(*CAUSES, f"data.goldens_dir={goldens}", "repeats=1", f"paths.baselines_dir={tmp_path / 'b'}")
    report, cases = run(cfg)
    labels = {(c["mode"], c["id"]): c for c in cases}
    assert labels[("e2e", "c-lost")]["cause"] == "retrieval_miss"
    assert labels[("oracle", "c-lost")]["cause"] == "retrieval_miss"
    assert "corpus holds no chunk of zephyr-winch" in labels[("oracle", "c-lost")]["cause_evidence"]
    assert any("'zephyr-winch'" in w and "the baseline had it" in w for w in report["warnings"])
    # The suite check refuses it unless a baseline knew it, naming file, line and value: a typo cannot pass CI.
    known_check = run_cli("tier=corpus", "action=check", CAUSES[0], f"data.goldens_dir={goldens}", "suite=causes",
                          f"paths.baselines_dir={tmp_path / 'b'}", f"hydra.run.dir={tmp_path / 'check'}")
    assert known_check.returncode == 0
    assert "'zephyr-winch' in relevantDocIds (the baseline had it)" in known_check.stderr
    check = run_cli("tier=corpus", "action=check", CAUSES[0], f"data.goldens_dir={goldens}", "suite=causes",
                    f"hydra.run.dir={tmp_path / 'check'}")
    assert check.returncode == 2
    assert re.search(r"causes.jsonl:8 \[c-lost\]: unknown doc id 'zephyr-winch'", check.stderr), check.stderr
