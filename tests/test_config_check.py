"""Config values checked before any work: a typo or impossible value names the key, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # every test runs the tool in a subprocess


@pytest.mark.parametrize(("overrides", "message"), [
    (["pipeline.chunk_overlap=900"], "pipeline.chunk_overlap=900 must be below pipeline.chunk_size=800"),
    (["tier=generation", "tier.max_tokens=abc"], "tier.max_tokens='abc': Input should be a valid integer"),
    (["data=beir"], "data.path must be set (it has no default: data.path=...)"),
    (["threshold=abc"], "threshold='abc': Input should be a valid number"),
    (["repeats=0"], "repeats=0: Input should be greater than or equal to 1"),
])
def test_bad_values_are_refused_up_front(overrides: list[str], message: str, tmp_path: Path) -> None:
    r = run_cli(*overrides, f"paths.data_dir={tmp_path / 'fresh'}", f"paths.run_dir={tmp_path / 'run'}")
    assert r.returncode == 2, r.stderr
    assert "invalid configuration" in r.stderr and message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "fresh").exists()  # nothing was ingested or cached


def test_an_unknown_top_level_key_is_named_with_the_key_meant(tmp_path: Path) -> None:
    r = run_cli("tier=corpus", "action=check", "+top_k=3", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0
    assert "`top_k` is not a nomad-eval setting: nothing reads it; did you mean pipeline.top_k?" in r.stderr


@pytest.mark.parametrize(("override", "message"), [
    ("store.distractors=revison", "store.distractors takes a path or one of: revisions, scifact"),
    ("suite=nonexistent", "no suite named 'nonexistent'; "),
    ("suite=cor", "no suite named 'cor'; did you mean 'core'? "),
    ("tags=[multiturn]", "no goldens carry any of tags=['multiturn']; did you mean 'multi-turn'? the suite's tags "
                         "(questions): acronym (13), "),
])
def test_a_misspelt_name_lists_the_real_ones(override: str, message: str, tmp_path: Path) -> None:
    r = run_cli("tier=retrieval", override, f"paths.data_dir={tmp_path / 'fresh'}", f"paths.run_dir={tmp_path / 'r'}")
    # A misspelt name is a refused setting (2), never the regression code (1).
    assert r.returncode == 2 and message in r.stderr
    if override.startswith("suite"):
        assert "has: core, long_context, off_topic" in r.stderr
