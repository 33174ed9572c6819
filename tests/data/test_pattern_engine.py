"""mustInclude / mustNotInclude are checked at load with the engine and flags that match them at run time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nomad_eval.base.errors import InvalidInput
from nomad_eval.data.golden import load_goldens
from nomad_eval.metrics.answer.measures import correctness


def _suite(tmp_path: Path, must_include: list[str]) -> Path:
    path = tmp_path / "suite.jsonl"
    rows = [{"id": "first", "query": "q", "relevantDocIds": ["d"]},
            {"id": "letters", "query": "Who wrote it?", "relevantDocIds": ["d"], "mustInclude": must_include}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# `re` refuses \p{L} and reads [[:alpha:]] as the set ":[ahlp" followed by "]"; `regex` reads both as letters.
@pytest.mark.parametrize("pattern", [r"\p{L}+", "[[:alpha:]]+", r"^[[:alpha:]]+$"])
def test_unicode_and_posix_classes_load_and_match_letters(tmp_path: Path, pattern: str) -> None:
    [_, golden] = load_goldens(_suite(tmp_path, [pattern]), {"d"}, [])
    assert correctness("Émile", golden.must_include, golden.must_not_include) == 1.0
    assert correctness("1234", golden.must_include, golden.must_not_include) == 0.0


def test_matching_is_case_insensitive_like_the_check(tmp_path: Path) -> None:
    [_, golden] = load_goldens(_suite(tmp_path, [r"\bKETTLE\b"]), {"d"}, [])
    assert correctness("descale the kettle", golden.must_include, []) == 1.0


# Both compile under `re`, so the old check let them through to fail at run time under `regex`.
@pytest.mark.parametrize(("pattern", "reason"), [("[[:foo:]]", "unknown property"),
                                                 ("[[:alpha:]", "unterminated character set")])
def test_a_pattern_the_matching_engine_refuses_is_refused_at_load(tmp_path: Path, pattern: str, reason: str) -> None:
    path = _suite(tmp_path, [pattern])
    with pytest.raises(InvalidInput) as exc:
        load_goldens(path, {"d"}, [])
    [d] = exc.value.defects
    assert (d.file, d.line, d.golden_id) == (str(path), 2, "letters")
    assert f"mustInclude pattern {pattern!r} does not compile: {reason}" in d.message


def test_a_pattern_nested_past_the_parser_is_refused_not_a_crash(tmp_path: Path) -> None:
    pattern = "(" * 2000 + "a" + ")" * 2000
    with pytest.raises(InvalidInput) as exc:
        load_goldens(_suite(tmp_path, [pattern]), {"d"}, [])
    assert "nested too deeply to compile" in str(exc.value)
