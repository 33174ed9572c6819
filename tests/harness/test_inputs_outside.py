"""Inputs a run must not take or spill: a suite file linked from outside the goldens folder is refused (its
questions would enter the run's files), and the warning naming documents no golden refers to stays one short line
however many there are."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.cli.entry import run_tier
from tests.conftest import FIXTURES
from tests.typed_config import runtime


def test_a_suite_linked_from_outside_the_goldens_folder_is_refused(
        tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    goldens, elsewhere = tmp_path / "goldens", tmp_path / "elsewhere"
    goldens.mkdir()
    elsewhere.mkdir()
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", elsewhere / "secret.jsonl")
    (goldens / "mini.jsonl").symlink_to(elsewhere / "secret.jsonl")
    args = (f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={goldens}", "suite=mini")
    with pytest.raises(NomadError) as exc:
        _ = runtime(make_cfg(*args)).suite_path
    assert exc.value.exit_code == 2
    assert str(exc.value).startswith(f"{goldens / 'mini.jsonl'}: a link to {elsewhere / 'secret.jsonl'}, outside "
                                     f"the goldens folder {goldens}: refused")
    assert runtime(make_cfg(*args, "data.follow_links=true")).suite_path == goldens / "mini.jsonl"
    (goldens / "mini.jsonl").unlink()
    (goldens / "mini.jsonl").symlink_to(goldens / "inside.jsonl")  # a link that stays inside is a plain file
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", goldens / "inside.jsonl")
    assert runtime(make_cfg(*args)).suite_path == goldens / "mini.jsonl"


@pytest.mark.parametrize("action", ["check", "lint"])
def test_check_and_lint_refuse_a_suite_linked_from_outside(tmp_path: Path, make_cfg: Callable[..., DictConfig],
                                                          capsys: pytest.CaptureFixture[str], action: str) -> None:
    goldens, elsewhere = tmp_path / "goldens", tmp_path / "elsewhere"
    goldens.mkdir()
    elsewhere.mkdir()
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", goldens / "mini.jsonl")
    shutil.copy(FIXTURES / "goldens" / "mini.jsonl", elsewhere / "secret.jsonl")
    (goldens / "other.jsonl").symlink_to(elsewhere / "secret.jsonl")
    args = (f"data.corpus_dir={FIXTURES / 'corpus'}", f"data.goldens_dir={goldens}", "suite=mini", "tier=corpus",
            f"action={action}")
    with pytest.raises(SystemExit) as exc:
        run_tier(make_cfg(*args))
    assert exc.value.code == 2
    assert f"{goldens / 'other.jsonl'}: a link to {elsewhere / 'secret.jsonl'}, outside" in capsys.readouterr().err
    assert run_tier(make_cfg(*args, "data.follow_links=true")) == 0


def test_the_unreferenced_documents_warning_names_twenty_and_counts_the_rest(
        tmp_path: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]) -> None:
    corpus, goldens = tmp_path / "corpus", tmp_path / "goldens"
    corpus.mkdir()
    goldens.mkdir()
    for i in range(300):
        (corpus / f"doc-{i:04d}.md").write_text(f"# Doc {i}\n\nA note about item {i}.\n")
    (goldens / "s.jsonl").write_text(json.dumps({"id": "q1", "query": "item 1?", "relevantDocIds": ["doc-0001"]})
                                     + "\n")
    assert run_tier(make_cfg(f"data.corpus_dir={corpus}", f"data.goldens_dir={goldens}", "suite=s", "tier=corpus",
                             "action=check")) == 0
    line = next(x for x in capsys.readouterr().err.splitlines() if "no golden refers to" in x)
    assert line.startswith("warning: 299 document(s) no golden refers to: doc-0000, doc-0002, ")
    assert line.endswith(", … and 279 more") and len(line) < 400
