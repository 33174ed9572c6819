"""What a first day found wrong in the reports, each pinned: the question beside its id, patterns as written,
an honest header outside git, refusal outcomes and corpus folders in the run browser."""

from __future__ import annotations

import json
from pathlib import Path

from hydra import compose, initialize_config_dir

from nomad_eval.base.paths import CONF
from nomad_eval.cli.entry import run_tier
from nomad_eval.data.golden import Golden
from nomad_eval.records import decode
from nomad_eval.report.browser import _overrides, questions
from nomad_eval.report.html_writer import _meta
from nomad_eval.report.schema import Report
from nomad_eval.run.generation_cases import failure_reason
from tests.conftest import MINI


def test_question_tables_show_the_question_and_the_header_says_when_there_is_no_commit(
        tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["tier=retrieval", f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                                           "quiet=true", *MINI])
    assert run_tier(cfg) == 0
    page = (run / "report.html").read_text()
    table = page.split("id='questions'")[1].split("</table>")[0]
    assert "<th>question</th>" in table
    assert "How long should the vinegar mix stand in the Brindle K2 kettle?" in table
    report = Report.model_validate(json.loads((run / "report.json").read_text()))
    assert report.provenance is not None
    outside = report.model_copy(update={"provenance": report.provenance.model_copy(
        update={"git_commit": None, "project_commit": None})})
    assert "commit ?" not in _meta(outside) and "project not in a git repository" in _meta(outside)


def test_a_missing_pattern_is_shown_as_written() -> None:
    g = Golden(id="g", query="How long?", relevantDocIds=["d"], mustInclude=[r"\b25\s*seconds"])
    assert failure_reason(g, "about a minute", refused=False, passed=False) == r"missing '\b25\s*seconds'"


def test_a_refusal_question_is_not_a_failure_and_starting_to_retrieve_is_a_change() -> None:
    def case(retrieved: list[dict[str, object]]) -> dict[str, object]:
        return {"id": "r1", "query": "Who won the 1962 cup?", "expect_refusal": True, "passed": None,
                "retrieved": retrieved, "metrics": {}}

    quiet = questions([decode(case([]))], "retrieval")
    hit = {"rank": 1, "doc_id": "kettle-descaling", "chunk_id": "kettle-descaling#0", "score": 0.4, "final_score": 0.4}
    loud = questions([decode(case([hit]))], "retrieval")
    assert quiet and loud
    assert quiet[0]["out"] == "refusal: nothing retrieved" and loud[0]["out"] == "refusal: retrieved"


def test_the_corpus_folder_is_a_key_override_in_the_run_browser() -> None:
    report = {"overrides": ["data.corpus_dir=corpus_v2", "paths.run_dir=/tmp/x", "quiet=true"]}
    assert _overrides(report) == ["data.corpus_dir=corpus_v2"]
