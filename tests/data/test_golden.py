"""The golden loader reports every defect with file, line, id and the offending value."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import Defect, InvalidInput
from nomad_eval.data.golden import Golden, goldens_hash, load_goldens, select
from tests.conftest import FIXTURES

GOOD = {"id": "g1", "query": "How long?", "turns": [], "relevantDocIds": ["doc-a"], "mustInclude": ["40 min"],
        "mustNotInclude": [], "expectRefusal": False, "tags": ["numeric"]}


def write(tmp_path: Path, *rows: object) -> Path:
    p = tmp_path / "suite.jsonl"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def defects(path: Path, docs: set[str] | None = None) -> str:
    with pytest.raises(InvalidInput) as exc:
        load_goldens(path, docs if docs is not None else {"doc-a", "doc-b"})
    return str(exc.value)


def test_valid_suite_loads_with_aliases(tmp_path: Path) -> None:
    g = load_goldens(write(tmp_path, GOOD), {"doc-a"})
    assert g[0].relevant_doc_ids == ["doc-a"] and g[0].must_include == ["40 min"]
    assert g[0].wire() == GOOD


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({**GOOD, "relevantDocIds": ["doc-zz"]}, "'doc-zz'"),
        ({**GOOD, "expectRefusal": True}, "expectRefusal is true"),
        ({**GOOD, "relevantDocIds": []}, "has no relevantDocIds"),
        ({**GOOD, "mustInclude": ["(unclosed"]}, "'(unclosed'"),
        ({**GOOD, "turns": [{"role": "wizard", "content": "hi"}]}, "'wizard'"),
        ({k: v for k, v in GOOD.items() if k != "relevantDocIds"}, "missing key 'relevantDocIds'"),
        ({k: v for k, v in GOOD.items() if k != "query"}, "missing key 'query'"),
        ({**GOOD, "expectRefusal": "maybe"}, "'maybe'"),
    ],
)
def test_each_defect_names_its_value(tmp_path: Path, row: dict[str, object], expected: str) -> None:
    msg = defects(write(tmp_path, row))
    assert expected in msg
    assert "suite.jsonl:1" in msg and "[g1]" in msg


def test_broken_json_line_is_named_by_number(tmp_path: Path) -> None:
    msg = defects(write(tmp_path, GOOD, {**GOOD, "id": "g2"}, "{not json"))
    assert "suite.jsonl:3" in msg and "not valid JSON" in msg


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    msg = defects(write(tmp_path, GOOD, {**GOOD, "relevantDocIds": ["doc-b"]}))
    assert "duplicate id 'g1'" in msg and "suite.jsonl:2" in msg and "first on line 1" in msg


def test_all_defects_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as exc:
        load_goldens(write(tmp_path, {**GOOD, "relevantDocIds": ["nope"]}, "[1]", {**GOOD, "id": "g3",
                                                                                   "mustInclude": ["("]}), {"doc-a"})
    assert len(exc.value.defects) == 3


def test_not_utf8_is_a_defect_not_a_crash(tmp_path: Path) -> None:
    p = tmp_path / "suite.jsonl"
    p.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\n")
    assert "suite.jsonl:2" in defects(p) and "UTF-8" in defects(p)


def test_hash_ignores_formatting_but_not_content(tmp_path: Path) -> None:
    a = load_goldens(write(tmp_path, GOOD), {"doc-a"})
    p2 = tmp_path / "other.jsonl"
    p2.write_text(json.dumps(GOOD, indent=None, separators=(",", ":")) + "\n\n")
    b = load_goldens(p2, {"doc-a"})
    assert goldens_hash(a) == goldens_hash(b)
    c = [Golden.model_validate({**GOOD, "query": "How long exactly?"})]
    assert goldens_hash(c) != goldens_hash(a)


def test_select_by_tags_then_limit() -> None:
    gs = [Golden.model_validate({**GOOD, "id": f"g{i}", "tags": ["a" if i % 2 else "b"]}) for i in range(6)]
    assert [g.id for g in select(gs, ["a"], None)] == ["g1", "g3", "g5"]
    assert [g.id for g in select(gs, ["a"], 2)] == ["g1", "g3"]
    assert len(select(gs, [], None)) == 6


HISTORY = [{"role": "user", "content": "tell me about X"}, {"role": "assistant", "content": "X is..."}]


def test_upstream_form_scores_query_and_keeps_turns_as_history() -> None:
    g = Golden.model_validate({**GOOD, "query": "and it?", "turns": HISTORY})
    assert g.final_query == "and it?"
    assert g.history == HISTORY


def test_old_form_reads_to_the_same_golden_and_hash(tmp_path: Path) -> None:
    """The old form repeated `query` as the final user turn: that turn is the question, dropped from history."""
    new = {**GOOD, "query": "and it?", "turns": HISTORY}
    old = {**new, "turns": [*HISTORY, {"role": "user", "content": "and it?"}]}
    a, b = load_goldens(write(tmp_path, old), {"doc-a"}), load_goldens(write(tmp_path, new), {"doc-a"})
    assert a[0].final_query == "and it?" and a[0].history == HISTORY
    assert a[0].wire() == b[0].wire() == new
    assert goldens_hash(a) == goldens_hash(b)


def test_hash_of_migrated_form_is_the_hash_the_old_form_always_had(tmp_path: Path) -> None:
    """The hash reads the conversation question-last, so a migrated suite keeps its identity (and baselines)."""
    old = {**GOOD, "query": "and it?", "turns": [*HISTORY, {"role": "user", "content": "and it?"}]}
    expected = hashlib.sha256(json.dumps([old], sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    assert goldens_hash(load_goldens(write(tmp_path, {**old, "turns": HISTORY}), {"doc-a"})) == expected
    assert goldens_hash([Golden.model_validate(GOOD)]) == hashlib.sha256(
        json.dumps([GOOD], sort_keys=True).encode()).hexdigest()[:16]


UPSTREAM = """// NOMAD eval goldens: long conversations.
// Blank lines and // lines are skipped by upstream's loader.

{"id": "up-min", "query": "How long?", "relevantDocIds": ["doc-a"]}
// a refusal, minimal
{"id": "up-ref", "query": "Boiling point of mercury?", "relevantDocIds": [], "expectRefusal": true}
{"id": "up-mt", "query": "and it?", "turns": HISTORY, "relevantDocIds": ["doc-b"], "notes": "from the fork"}
""".replace("HISTORY", json.dumps(HISTORY))


def test_upstream_file_loads_unchanged_with_defaults_and_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "suite.jsonl"
    p.write_text(UPSTREAM)
    warnings: list[Defect] = []
    gs = load_goldens(p, {"doc-a", "doc-b"}, warnings)
    assert [g.id for g in gs] == ["up-min", "up-ref", "up-mt"]
    minimal = gs[0]
    assert (minimal.turns, minimal.must_include, minimal.must_not_include, minimal.expect_refusal, minimal.tags) \
        == ([], [], [], False, [])
    assert gs[1].expect_refusal and gs[2].final_query == "and it?" and gs[2].history == HISTORY
    assert gs[2].extra == {"notes": "from the fork"} and "notes" not in gs[2].wire()
    assert [str(w) for w in warnings] == [
        f"{p}:7 [up-mt]: warning: unknown key 'notes' ignored (value \"from the fork\")"]


def test_warnings_print_to_stderr_when_not_collected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "suite.jsonl"
    p.write_text(UPSTREAM)
    load_goldens(p, {"doc-a", "doc-b"})
    err = capsys.readouterr().err
    assert "suite.jsonl:7 [up-mt]: warning: unknown key 'notes'" in err


def test_defect_line_numbers_count_comment_and_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "suite.jsonl"
    p.write_text("// header\n\n" + json.dumps({**GOOD, "relevantDocIds": ["doc-zz"]}) + "\n")
    msg = defects(p)
    assert "suite.jsonl:3 [g1]" in msg and "'doc-zz'" in msg


def test_history_ending_with_a_different_user_turn_is_a_warning_naming_both(tmp_path: Path) -> None:
    """Upstream's form allows it (query is asked); the warning catches an old-form golden whose query drifted."""
    row = {**GOOD, "query": "How long exactly?", "turns": [{"role": "user", "content": "How long?"}]}
    warnings: list[Defect] = []
    g = load_goldens(write(tmp_path, GOOD | {"id": "g0"}, row), {"doc-a"}, warnings)[1]
    assert g.final_query == "How long exactly?" and g.history == [{"role": "user", "content": "How long?"}]
    assert len(warnings) == 1
    w = str(warnings[0])
    assert "suite.jsonl:2 [g1]" in w and '"How long?"' in w and '"How long exactly?"' in w


def test_clean_suite_has_no_warnings(tmp_path: Path) -> None:
    warnings: list[Defect] = []
    load_goldens(write(tmp_path, GOOD, {**GOOD, "id": "g2", "query": "and it?", "turns": HISTORY}), {"doc-a"},
                 warnings)
    assert warnings == []


def test_shipped_suites_are_in_upstream_form_without_warnings() -> None:
    """Migrated: no shipped golden repeats its query as a final user turn, and none reads with a warning."""
    from nomad_eval.base.paths import REPO
    from nomad_eval.data.corpus import load_markdown_dir

    ids = {d.doc_id for d in load_markdown_dir(REPO / "corpus")}
    paths = sorted((REPO / "goldens").glob("*.jsonl")) + sorted((REPO / "tests/fixtures/goldens").glob("*.jsonl"))
    assert len(paths) >= 4
    for path in paths:
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip() and not x.startswith("//")]
        repeated = [r["id"] for r in rows if r.get("turns") and r["turns"][-1] == {"role": "user",
                                                                                  "content": r["query"]}]
        assert repeated == [], path
        warnings: list[Defect] = []
        load_goldens(path, ids if path.parent.name == "goldens" and path.parent.parent == REPO else None, warnings)
        assert warnings == [], path


# An upstream-style suite over the fixture corpus: header comments, a blank line, minimal goldens, prior history
# ending with the assistant (whose user turn is NOT the question), an unknown key.
E2E = [
    "// NOMAD eval goldens written the upstream way",
    "// (comment lines and blank lines are skipped)",
    "",
    json.dumps({"id": "up-01", "query": "How long should the vinegar mix stand in the Brindle K2 kettle?",
                "relevantDocIds": ["kettle-descaling"], "mustInclude": ["40 minutes"]}),
    json.dumps({"id": "up-02", "query": "And how long does it run on high?",
                "turns": [{"role": "user", "content": "I have an Osprey L9 lantern with NiMH cells."},
                          {"role": "assistant", "content": "It takes four AA cells."}],
                "relevantDocIds": ["lantern-batteries"], "mustInclude": ["3 hours"], "tags": ["multi-turn"],
                "source": "fork"}),
    json.dumps({"id": "up-03", "query": "What is the boiling point of mercury?", "relevantDocIds": [],
                "expectRefusal": True}),
]


@pytest.fixture
def upstream_dir(tmp_path: Path) -> Path:
    d = tmp_path / "goldens"
    d.mkdir()
    (d / "upstream.jsonl").write_text("\n".join(E2E) + "\n")
    return d


def test_upstream_suite_passes_check_with_a_warning(upstream_dir: Path, tmp_path: Path) -> None:
    from tests.conftest import FIXTURES, run_cli

    r = run_cli("tier=corpus", "action=check", f"data.corpus_dir={FIXTURES / 'corpus'}",
                f"data.goldens_dir={upstream_dir}", "suite=upstream", f"hydra.run.dir={tmp_path / 'out'}")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "suite upstream: 3 goldens — ok" in out
    assert "upstream.jsonl:5 [up-02]: warning: unknown key 'source'" in out


def test_upstream_suite_runs_score_the_query(upstream_dir: Path, make_cfg: Callable[..., DictConfig]) -> None:
    """Retrieval and mock generation ask `query`, never the history's user turn."""
    from nomad_eval.cli.entry import run_tier
    from tests.conftest import FIXTURES

    args = (f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={upstream_dir}", "suite=upstream")
    expected = {json.loads(x)["id"]: json.loads(x)["query"] for x in E2E if x.startswith("{")}
    for extra in (("tier=retrieval",), ("tier=generation", "model=mock", "mode=e2e", "repeats=1")):
        cfg = make_cfg(*args, *extra)
        assert run_tier(cfg) == 0
        out = Path(cfg.paths.run_dir)
        cases = [json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()]
        assert {c["id"]: c["query"] for c in cases} == expected, extra
        warnings = json.loads((out / "report.json").read_text())["warnings"]
        assert any("[up-02]: warning: unknown key 'source'" in w for w in warnings), extra  # kept for CI logs
        lantern = next(c for c in cases if c["id"] == "up-02")
        assert lantern["retrieved"][0]["doc_id"] == "lantern-batteries", extra
        if "model=mock" in extra:
            assert lantern["passed"] is True  # the ceiling answered the asked question: "3 hours" on high
        shutil.rmtree(out)


def test_an_unknown_suite_or_a_tag_filter_matching_nothing_is_refused_with_the_nearest_name(tmp_path: Path) -> None:
    from nomad_eval.base.errors import NomadError
    from nomad_eval.data.golden import select_or_refuse, suite_file

    for name in ("core", "long_context"):
        (tmp_path / f"{name}.jsonl").write_text("")
    assert suite_file(tmp_path, "core") == tmp_path / "core.jsonl"
    with pytest.raises(NomadError) as exc:
        suite_file(tmp_path, "cor")
    assert exc.value.exit_code == 2 and "no suite named 'cor'; did you mean 'core'?" in str(exc.value)
    assert f"{tmp_path} has: core, long_context" in str(exc.value)

    goldens = load_goldens(FIXTURES / "goldens" / "mini.jsonl")
    tags = sorted({t for g in goldens for t in g.tags})
    assert select_or_refuse(goldens, [tags[0]], None, "suite 'mini'")
    with pytest.raises(NomadError) as exc:
        select_or_refuse(goldens, ["no-such-tag"], None, "suite 'mini'")
    assert exc.value.exit_code == 2
    assert "suite 'mini': no goldens carry any of tags=['no-such-tag']; the suite's tags (questions): " \
           f"{tags[0]} (" in str(exc.value)


def test_a_document_a_baseline_knew_is_a_change_and_one_nobody_knew_is_a_typo(tmp_path: Path) -> None:
    line = {"id": "g1", "query": "How long?", "relevantDocIds": ["old-name"], "mustInclude": ["40 minutes"]}
    suite = tmp_path / "core.jsonl"
    suite.write_text(json.dumps(line) + "\n")
    found: list[Defect] = []
    assert [g.id for g in load_goldens(suite, {"new-name"}, found, known_doc_ids={"old-name"})] == ["g1"]
    assert len(found) == 1 and "'old-name' in relevantDocIds (the baseline had it): a change" in str(found[0])
    with pytest.raises(InvalidInput) as typo:
        load_goldens(suite, {"new-name"}, [], known_doc_ids={"other"})
    assert typo.value.exit_code == 2
    assert str(typo.value.defects[0]).startswith(f"{suite}:1 [g1]: unknown doc id 'old-name' in relevantDocIds")
