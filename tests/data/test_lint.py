from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

BASE = {"turns": [], "mustNotInclude": [], "expectRefusal": False}


@pytest.mark.slow
def test_lint_flags_weak_goldens_with_file_and_line(tmp_path: Path) -> None:
    rows = [
        {**BASE, "id": "w-time", "query": "How long does the vinegar stand?", "relevantDocIds": ["kettle-descaling"],
         "mustInclude": ["time"], "tags": ["weak"]},
        {**BASE, "id": "w-self", "query": "How many AA cells does the Osprey L9 take?",
         "relevantDocIds": ["lantern-batteries"], "mustInclude": ["AA cells"], "tags": ["weak"]},
        {**BASE, "id": "w-empty", "query": "What temperature does compost reach?", "relevantDocIds": ["garden-compost"],
         "mustInclude": ["(55)?"], "tags": ["weak"]},
        {**BASE, "id": "w-refusal", "query": "When do I retire a rope?", "relevantDocIds": ["rope-storage"],
         "mustInclude": ["information|10 years"], "tags": ["weak"]},
        {**BASE, "id": "w-acr", "query": "What is the ORS recipe?", "relevantDocIds": ["bread-starter"],
         "mustInclude": ["flour"], "tags": ["acronym", "weak"]},
        {**BASE, "id": "good", "query": "How long does it stand?", "relevantDocIds": ["kettle-descaling"],
         "mustInclude": [r"40 minutes"], "tags": ["weak"]},
    ]
    (tmp_path / "weak.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run_cli("tier=corpus", "action=lint", f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={tmp_path}",
                "suite=weak", f"hydra.run.dir={tmp_path / 'h'}")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "weak.jsonl:1 [w-time]: mustInclude 'time' is one common word" in out
    assert "weak.jsonl:2 [w-self]: mustInclude 'AA cells' matches the question itself" in out
    assert "weak.jsonl:3 [w-empty]" in out and "matches an empty answer" in out
    assert "weak.jsonl:4 [w-refusal]" in out and "matches a refusal" in out
    assert "weak.jsonl:5 [w-acr]: acronym question without its spelled-out twin" in out
    assert "tag 'acronym' is used once" in out
    assert "[good]" not in out


@pytest.mark.slow
def test_lint_flags_the_pattern_defects_upstream_suites_contain(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in {"rope": "Retire a rope after 10 years, or 2 hard falls. Call on channel 19.",
                       "ice": "Cool a burn under water.", "weather": "Humid air at midday; store 2 spare cells.",
                       "stove": "Use 2 litres of fuel.",
                       "salt": "Mix 2 level teaspoons of salt per litre."}.items():
        (corpus / f"{name}.md").write_text(f"# {name}\n\n{text}\n")
    ans = {"turns": [], "mustNotInclude": [], "relevantDocIds": ["rope"], "tags": ["t"]}
    rows = [
        {**ans, "id": "alt", "query": "When do I retire a rope?", "mustInclude": ["20|30 years"]},
        {**ans, "id": "frag", "query": "When is the air driest?", "mustInclude": ["mid"]},
        {**ans, "id": "num", "query": "How many falls?", "mustInclude": ["2"]},
        {**ans, "id": "neg", "query": "How do I cool a burn?", "mustInclude": ["water"], "relevantDocIds": ["ice"],
         "mustNotInclude": [r"\buse ice\b"]},
        {**ans, "id": "good", "query": "When do I retire a rope?", "relevantDocIds": ["rope", "weather"],
         "mustInclude": ["(10|20) years", r"\bmidday\b", "channel 19|19"],
         "mustNotInclude": [r"(?<!not )\buse ice\b"]},
        {**ans, "id": "acr-ors-01", "query": "ORS recipe?", "mustInclude": ["teaspoons"], "relevantDocIds": ["salt"],
         "tags": ["acronym"]},
        {**ans, "id": "acr-ors-spelled-01", "query": "Oral rehydration solution recipe?", "mustInclude": ["teaspoons"],
         "relevantDocIds": ["salt"], "tags": ["acronym-control", "t"]},
        {**ans, "id": "acr-bare", "query": "BMS?", "mustInclude": ["cells"], "relevantDocIds": ["weather"],
         "tags": ["acronym"]},
    ]
    (tmp_path / "up.jsonl").write_text("// upstream-style header\n" + "".join(json.dumps(r) + "\n" for r in rows))
    r = run_cli("tier=corpus", "action=lint", f"data.corpus_dir={corpus}", f"data.goldens_dir={tmp_path}",
                "suite=up", f"hydra.run.dir={tmp_path / 'h'}")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "up.jsonl:2 [alt]: mustInclude '20|30 years': '|' splits the whole pattern, so its bare branch '20'" in out
    assert "up.jsonl:3 [frag]: mustInclude 'mid' matches inside the word 'humid'" in out
    assert "up.jsonl:4 [num]: mustInclude '2' is a bare number found in 4 of 5 documents" in out
    assert r"up.jsonl:5 [neg]: mustNotInclude '\buse ice\b' matches the correct negated answer 'Do not use ice.'" \
        in out  # the pattern as the goldens file writes it
    assert "[good]" not in out
    assert "[acr-ors-01]" not in out  # its twin is named the upstream way
    assert "up.jsonl:9 [acr-bare]: acronym question without its spelled-out twin" in out


def test_fragments_are_checked_against_the_corpus_words_and_negations_against_common_actions(tmp_path: Path) -> None:
    from nomad_eval.data.corpus import Document
    from nomad_eval.data.golden import Golden
    from nomad_eval.data.lint import lint

    docs = [Document("well", "well.md", "Test the well every spring. Wait 12 hours, then flush it; wired pumps too.")]

    def golden(gid: str, inc: list[str], exc: list[str] | None = None) -> Golden:
        return Golden(id=gid, query="When?", relevantDocIds=["well"], mustInclude=inc, mustNotInclude=exc or [],
                      expectRefusal=False, tags=[], turns=[])

    goldens = [golden("frag", ["spr"]), golden("brush", ["brush"]), golden("wire", ["wire"]),
               golden("bounded", [r"\bspr\b"]), golden("flush", ["12 hours"], [r"\bflush\b"]),
               golden("guarded", ["12 hours"], [r"(?<!not )\bflush\b"])]
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": g.id}) + "\n" for g in goldens))
    found = {f.golden_id: f.message for f in lint(goldens, docs, suite) if "relevant documents" not in f.message}
    assert "inside the word 'spring'" in found["frag"]  # a word of this corpus, not of a fixed list
    assert "brush" not in found and "wire" not in found and "bounded" not in found  # whole words, inflections
    assert "'Do not flush.'" in found["flush"] and "guarded" not in found


def test_lint_flags_the_two_defects_nomads_core_suite_ships_and_knows_its_twin_naming() -> None:
    """On excerpts of upstream NOMAD's own core suite and corpus, unchanged (tests/fixtures/upstream_core/SOURCE.md)."""
    from nomad_eval.data.corpus import load_markdown_dir
    from nomad_eval.data.golden import load_goldens
    from nomad_eval.data.lint import lint

    root = FIXTURES / "upstream_core"
    suite = root / "goldens" / "core.jsonl"
    findings = lint(load_goldens(suite, warnings=[]), load_markdown_dir(root / "corpus"), suite)
    found = {(f.golden_id, f.line): f.message for f in findings}
    # The document says "Do **not** use ice": the second branch of a top-level alternation hid it from the check.
    assert "'Do not use ice.'" in found[("firstaid-burn-ice-01", 5)]
    # The document wraps the figure as "16\ndrops": even an answer quoting it fails.
    bleach = found[("water-bleach-cloudy-01", 2)]
    assert "mustInclude '16 drops' matches none of its relevant documents (water-chemical-treatment)" in bleach
    assert "'16\\ndrops'" in bleach
    acronym = {gid for gid, _ in found if "spelled-out twin" in found[(gid, _)]}
    assert acronym == {"gear-edc-acronym-01"}  # ifak, emp and bob have their -spelled-01 twins; edc has none


def test_a_must_include_its_documents_never_say_is_named_with_the_nearest_text(tmp_path: Path) -> None:
    from nomad_eval.data.corpus import Document
    from nomad_eval.data.golden import Golden
    from nomad_eval.data.lint import lint

    docs = [Document("tent", "tent.md", "Stake the tent with six guy lines.\nRetension them after rain.")]

    def golden(gid: str, inc: list[str]) -> Golden:
        return Golden(id=gid, query="How?", relevantDocIds=["tent"], mustInclude=inc, mustNotInclude=[],
                      expectRefusal=False, tags=[], turns=[])

    goldens = [golden("typo", ["seven guy lines"]), golden("said", [r"six guy lines"]),
               golden("wrap", ["them after"]), golden("alt", ["eight|six guy"])]
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps({"id": g.id}) + "\n" for g in goldens))
    found = {f.golden_id: f.message for f in lint(goldens, docs, suite) if "relevant documents" in f.message}
    assert set(found) == {"typo"}
    assert "mustInclude 'seven guy lines' matches none of its relevant documents (tent): the nearest text is " \
           "'six guy lines.'" in found["typo"]


def test_a_pattern_in_a_finding_reads_as_written(tmp_path: Path) -> None:
    """`'\\bthe\\b'`, as the goldens file holds it, not repr's `'\\\\bthe\\\\b'`."""
    from nomad_eval.data.corpus import load_markdown_dir
    from nomad_eval.data.golden import load_goldens
    from nomad_eval.data.lint import lint

    row = {**BASE, "id": "w-the", "query": "How long does the vinegar stand?", "relevantDocIds": ["kettle-descaling"],
           "mustInclude": [r"\bthe\b"]}
    suite = tmp_path / "s.jsonl"
    suite.write_text(json.dumps(row) + "\n")
    docs = load_markdown_dir(FIXTURES / "corpus")
    findings = [str(f) for f in lint(load_goldens(suite, {d.doc_id for d in docs}), docs, suite)]
    assert any(r"mustInclude '\bthe\b'" in f for f in findings), findings
    assert not any(r"\\b" in f for f in findings), findings


def test_a_pattern_that_times_out_is_named_not_counted_as_no_match(tmp_path: Path) -> None:
    from nomad_eval.data.corpus import load_markdown_dir
    from nomad_eval.data.golden import load_goldens
    from nomad_eval.data.lint import lint

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "alarm.md").write_text("# Alarm\n\nThe alarm sounds " + "a" * 30 + "b when smoke reaches it.\n")
    suite = tmp_path / "slow.jsonl"
    suite.write_text(json.dumps({**BASE, "id": "slow", "query": "What does the alarm do?", "tags": [],
                                 "relevantDocIds": ["alarm"], "mustInclude": ["(a|a)+$"]}) + "\n")
    docs = load_markdown_dir(corpus)
    findings = [str(f) for f in lint(load_goldens(suite, {d.doc_id for d in docs}), docs, suite)]
    assert any(f"{suite}:1 [slow]: mustInclude '(a|a)+$' ran past the 1 s match limit on 1 text(s)" in f
               for f in findings), findings
