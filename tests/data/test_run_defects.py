"""A run that stops on a suite's defects names every defect the suite check names, the unknown document ids too
(which, in a suite without other defects, a run takes as warnings and scored misses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nomad_eval.base.errors import InvalidInput
from nomad_eval.data.golden import load_goldens


def _line(gid: str, **over: object) -> str:
    golden = {"id": gid, "query": "How long does the kettle take?", "turns": [], "relevantDocIds": ["kettle"],
              "mustInclude": [], "mustNotInclude": [], "expectRefusal": False, "tags": []}
    return json.dumps({**golden, **over})


def _defects(path: Path, fatal: bool) -> list[tuple[int | None, str | None]]:
    with pytest.raises(InvalidInput) as exc:
        load_goldens(path, {"kettle"}, [], missing_docs_fatal=fatal)
    return [(d.line, d.golden_id) for d in exc.value.defects]


def test_a_run_names_the_same_defects_as_the_check(tmp_path: Path) -> None:
    suite = tmp_path / "core.jsonl"
    suite.write_text("\n".join([_line("a"), _line("a"), _line("b", mustInclude=["(unclosed"]),
                                _line("c", relevantDocIds=["no-such-doc"]), _line("d", query="")]) + "\n")
    check = _defects(suite, fatal=True)
    assert len(check) == 4 and (4, "c") in check
    assert _defects(suite, fatal=False) == check
