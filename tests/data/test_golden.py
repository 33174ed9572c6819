"""The golden loader reports every defect with file, line, id and the offending value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nomad_eval.base.errors import InvalidInput
from nomad_eval.data.golden import Golden, goldens_hash, load_goldens, select

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
        ({k: v for k, v in GOOD.items() if k != "mustNotInclude"}, "missing key 'mustNotInclude'"),
        ({**GOOD, "colour": "red"}, "unknown key 'colour'"),
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


def test_multi_turn_scores_the_final_user_message() -> None:
    g = Golden.model_validate({**GOOD, "query": "and it?", "turns": [
        {"role": "user", "content": "tell me about X"}, {"role": "assistant", "content": "X is..."},
        {"role": "user", "content": "and it?"}]})
    assert g.final_query == "and it?"
