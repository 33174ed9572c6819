"""tier=labels: a seeded sample of judged answers, labelled in a terminal loop, read back as a corrected estimate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import ppi_py
import pytest

from nomad_eval.base.paths import REPO
from nomad_eval.judges.judge import Rubric, load_rubric
from nomad_eval.records import AnswerCase, decode, only
from nomad_eval.report.details import GenerationDetails
from nomad_eval.report.io import read_report
from nomad_eval.report.schema import Identity, Report
from nomad_eval.run.labels import Label, draw_sample, judge_corrected, judged, population_hash, read_labels, text_hash
from nomad_eval.tiers.judge_labels import label_loop
from tests.conftest import MINI, run_cli, run_in_process
from tests.servers import openai_compat
from tests.written import records

RUBRICS = REPO / "nomad_eval" / "conf" / "rubrics"
FAITH = load_rubric(RUBRICS, "faithfulness")
RELEVANCE = load_rubric(RUBRICS, "relevance")


def case(i: int, repeat: int = 0, verdict: int | None = 1, **kw: Any) -> AnswerCase:
    written = decode({"id": f"g{i:02d}", "mode": "e2e", "repeat": repeat, "query": f"question {i}?",
                      "injected": [f"d{i}#0"], "answer": f"answer {i}", "refused": False, "expect_refusal": False,
                      "judges": {"faithfulness": verdict}, **kw})
    assert isinstance(written, AnswerCase)
    return written


def scripted(answers: list[str]) -> Any:
    it = iter(answers)

    def read(prompt: str) -> str:
        try:
            return next(it)
        except StopIteration:
            raise EOFError from None

    return read


def test_label_loop_takes_scale_values_skips_and_stops(capsys: pytest.CaptureFixture[str]) -> None:
    items = [(case(i), [f"passage {i}"]) for i in range(5)]
    got: list[tuple[str, int | None]] = []
    n = label_loop(items, FAITH, scripted(["1", "2", "x", "s", "0", "q", "1"]),
                   lambda c, label: got.append((c.id, label)))
    assert n == 3 and got == [("g00", 1), ("g01", None), ("g02", 0)]  # "2" and "x" are asked again
    out = capsys.readouterr().out
    assert out.count("please answer with 0, 1, s or q") == 2
    assert "passage 2" in out and "answer 3" in out and "answer 4" not in out  # stopped at the fourth


def test_label_loop_stops_at_end_of_input() -> None:
    got: list[int | None] = []
    items = [(case(i), []) for i in range(3)]
    assert label_loop(items, RELEVANCE, scripted(["2"]), lambda c, label: got.append(label)) == 1
    assert got == [2]


def test_label_loop_prints_untrusted_text_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    label_loop([(case(0, answer="[red]see [/red] here [bold]"), ["[link=x]p[/link]"])], FAITH, scripted(["q"]),
               lambda c, label: None)
    out = capsys.readouterr().out
    assert "[red]see [/red] here [bold]" in out and "[link=x]p[/link]" in out


def test_sample_is_seeded_by_question_and_a_larger_one_extends_it() -> None:
    cases = [case(i, r) for i in range(20) for r in range(3)]
    small, large = draw_sample(cases, 0, 5), draw_sample(cases, 0, 12)
    assert large[:5] == small
    assert len({c.id for c in large}) == 12  # one answer per question
    assert draw_sample(cases, 0, 12) == large and draw_sample(cases, 1, 12) != large
    assert len(draw_sample(cases, 0, 50)) == 20
    assert len({c.repeat for c in draw_sample(cases, 0, 20)}) > 1  # the repeat is drawn too


def test_the_population_leaves_out_only_rule_decided_nulls() -> None:
    cases = [case(0), case(1, verdict=None), case(2, refused=True, expect_refusal=True),
             case(3).model_copy(update={"mode": "oracle"})]
    assert [c.id for c in judged(cases, FAITH, "e2e")] == ["g00", "g01", "g02"]  # a refusal is faithful by rule
    assert [c.id for c in judged(cases, RELEVANCE, "e2e")] == ["g00", "g01"]  # a correct refusal has no score


def report_for(fingerprint: str, rubric: Rubric = FAITH) -> Report:
    ident = Identity(fingerprint=fingerprint, goldens_hash="h", suite="s", embedder="minilm", pipeline="default")
    return Report(tier="generation", identity=ident,
                  details=GenerationDetails(judges={f"e2e.{rubric.name}": {"rubric": rubric.key}}))


def label_for(c: dict[str, Any], label: int | None, population: list[dict[str, Any]], fingerprint: str = "f" * 16,
              **kw: Any) -> Label:
    return Label(fingerprint=fingerprint, id=c.id, mode=c.mode, repeat=c.repeat, rubric=FAITH.key,
                 text_hash=text_hash(c), population=population_hash(population), label=label, scale=FAITH.scale, **kw)


def test_judge_corrected_uses_labels_of_exactly_this_runs_answers() -> None:
    rng = np.random.default_rng(1)
    truth = (rng.random(40) < 0.5).astype(int)
    verdicts: list[int | None] = [1 if t or i % 3 == 0 else 0 for i, t in enumerate(truth)]  # a third of fails pass
    verdicts[5] = None
    cases = [case(i, verdict=v) for i, v in enumerate(verdicts)]
    labels = [label_for(cases[0], 1 - int(truth[0]), cases)]  # labelled again below: the later line wins
    labels += [label_for(cases[i], int(truth[i]), cases) for i in range(14)]
    labels.append(label_for(cases[14], None, cases))  # skipped
    labels.append(label_for(cases[16], 1, cases, fingerprint="0" * 16))  # another corpus: not this run's
    labels.append(label_for(cases[17], 1, cases).model_copy(update={"rubric": "faithfulness-v1"}))  # another rubric
    got = judge_corrected(report_for("f" * 16), cases, labels, [FAITH])["e2e.faithfulness"]
    assert got["status"] == "corrected" and (got["n"], got["N"]) == (14, 40)
    assert (got["skipped"], got["stale_labels"], got["null_verdicts"]) == (1, 0, 1)
    scored = np.array([0.5 if v is None else float(v) for v in verdicts])
    low, high = ppi_py.ppi_mean_ci(truth[:14].astype(float), scored[:14], scored[14:], alpha=0.05, lam=1)
    assert (got["low"], got["high"]) == pytest.approx((float(low[0]), float(high[0])), abs=1e-12)
    assert got["disagreements"] == sum(int(truth[i]) != verdicts[i] for i in range(14))

    # One labelled answer has changed since: the labels left are no longer a random sample of the run's answers.
    changed = [c.model_copy(update={"answer": "regenerated"}) if c.id == "g03" else c for c in cases]
    got = judge_corrected(report_for("f" * 16), changed, labels, [FAITH])["e2e.faithfulness"]
    assert got["status"] == "refused" and got["estimate"] is None and got["stale_labels"] == 1
    assert "not a random sample" in got["reason"]
    # Labels drawn from another set of answers (here a run of 30 of these questions) stand for none of these.
    other = [label_for(cases[i], int(truth[i]), cases[:30]) for i in range(14)]
    got = judge_corrected(report_for("f" * 16), cases, other, [FAITH])["e2e.faithfulness"]
    assert got["status"] == "refused" and got["stale_labels"] == 14 and "14 label(s)" in got["reason"]

    none = judge_corrected(report_for("f" * 16), cases, [], [FAITH])["e2e.faithfulness"]
    assert none["status"] == "uncorrected" and none["estimate"] is None and "uncorrected" in none["reason"]


def test_a_labels_file_with_a_bad_line_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    good = label_for(case(0), 1, [case(0)]).model_dump()
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "label": "yes"}) + "\n")
    with pytest.raises(Exception, match=r"labels.jsonl:2.*label"):
        read_labels(path)


def judge_by_answer_length(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    answer = re.search(r"<answer>\n(.*?)\n</answer>", user, re.DOTALL).group(1)  # type: ignore[union-attr]
    return json.dumps({"verdict": len(answer) % 2, "reason": "scripted"})


@pytest.mark.slow
def test_labels_tier_from_a_judged_run_to_a_corrected_estimate(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    with openai_compat.serve("judge", judge_by_answer_length) as url:
        # The judged run is made in-process; the labelling sessions below are the commands under test.
        assert run_in_process("tier=generation", "model=mock", "mode=e2e", "repeats=2", *MINI, "judge=faithfulness",
                              "model@judge.model=openai", "judge.model.name=judge", f"judge.model.base_url={url}",
                              f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true", "cache=false") == 0
    unlabelled = read_report(run).answer_part().judge_corrected["e2e.faithfulness"]  # no labels yet: said, not hidden
    assert unlabelled["status"] == "uncorrected" and unlabelled["estimate"] is None
    assert "e2e.faithfulness: judge mean" in (run / "report.md").read_text()
    # The uncorrected judge mean carries its own interval (questions resampled whole) and n.
    section = read_report(run).answer_part().judges["e2e.faithfulness"]
    assert section["questions"] == 8 and section["n"] + section["unparseable"] + section["rejected"] == 16
    assert section["low"] <= section["mean"] <= section["high"] and section["low"] < section["high"]
    assert f"[{section['low']:.3f}, {section['high']:.3f}]" in (run / "report.md").read_text()

    def label(answers: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "nomad_eval", "tier=labels", f"tier.run={run}",
                               "tier.sample=6", f"hydra.run.dir={tmp_path / 'h'}", *extra],
                              input=answers, capture_output=True, text=True, timeout=120, cwd=REPO)

    first = label("1\nmaybe\ns\n0\nq\n")
    assert first.returncode == 0, first.stderr
    assert "please answer with 0, 1, s or q" in first.stdout
    assert "0 of a sample of 6 already labelled" in first.stdout
    rows = read_labels(run / "judge_labels.jsonl")
    assert [r.label for r in rows] == [1, None, 0]
    cases = only(records(json.loads(x) for x in (run / "cases.jsonl").read_text().splitlines()), AnswerCase)
    by_key = {(c.id, c.repeat): c for c in cases if c.mode == "e2e"}
    report = read_report(run)
    for r in rows:
        assert (r.fingerprint, r.rubric, r.mode) == (report.identity.fingerprint, "faithfulness-v2", "e2e")  # type: ignore[union-attr]
        assert r.text_hash == text_hash(by_key[(r.id, r.repeat)])
    assert "uncorrected: 2 labelled question(s) of the 10" in first.stdout  # 8 questions: too few to correct

    again = label("1\n1\n1\n")  # the same seed: the sample goes on where the first session stopped
    assert again.returncode == 0, again.stderr
    assert "3 of a sample of 6 already labelled" in again.stdout
    rows = read_labels(run / "judge_labels.jsonl")
    assert len(rows) == 6 and len({(r.id, r.repeat) for r in rows}) == 6 and len({r.id for r in rows}) == 6
    # The run's own report now carries what the labels say (here: too few to correct, and why).
    updated = read_report(run).answer_part().judge_corrected["e2e.faithfulness"]
    assert (updated["status"], updated["n"]) == ("refused", 5)
    assert "5 labelled question(s)" in (run / "report.md").read_text()

    # The same answers in a later report get the labels; a changed answer does not.
    result = judge_corrected(report, cases, rows, [FAITH])["e2e.faithfulness"]
    assert (result["n"], result["N"], result["skipped"], result["stale_labels"]) == (5, 8, 1, 0)
    labelled = next(r for r in rows if r.label is not None)
    changed = [c.model_copy(update={"answer": c.answer + " (regenerated)"}) if (c.id, c.repeat) == (labelled.id,
               labelled.repeat) else c for c in cases]
    result = judge_corrected(report, changed, rows, [FAITH])["e2e.faithfulness"]
    assert (result["n"], result["stale_labels"], result["status"]) == (4, 1, "refused")
    assert all(r.population == rows[0].population for r in rows)


@pytest.mark.slow
def test_labels_tier_refusals(tmp_path: Path) -> None:
    r = run_cli("tier=labels", f"hydra.run.dir={tmp_path / 'h'}")
    assert r.returncode == 2 and "tier.run=" in r.stderr
    r = run_cli("tier=labels", f"tier.run={tmp_path}", "tier.sample=0", f"hydra.run.dir={tmp_path / 'h2'}")
    assert r.returncode == 2 and "tier.sample=0" in r.stderr
