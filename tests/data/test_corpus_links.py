"""The corpus stays in its folder (issue 32, medium case 3): a link resolving outside the corpus folder is refused
by the loader, by `action=check` and by a run, naming the link and its target; `data.follow_links=true` reads it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import InvalidInput
from nomad_eval.cli.entry import run_tier
from nomad_eval.data.corpus import load_markdown_dir
from tests.conftest import FIXTURES, run_cli

SECRET = "# Deploy keys\n\nThe staging password is hunter2, kept outside the corpus.\n"


def _corpus_with_links(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the fixture corpus with a link to a file outside it, and the outside file."""
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    outside = tmp_path / "private" / "notes.md"
    outside.parent.mkdir()
    outside.write_text(SECRET)
    (corpus / "notes.md").symlink_to(outside)
    return corpus, outside


def test_a_link_out_of_the_corpus_is_refused_naming_link_and_target(tmp_path: Path) -> None:
    corpus, outside = _corpus_with_links(tmp_path)
    with pytest.raises(InvalidInput) as exc:
        load_markdown_dir(corpus)
    [defect] = exc.value.defects
    assert defect.file == str(corpus / "notes.md") and str(outside) in defect.message
    assert "outside the corpus folder" in defect.message and "data.follow_links=true" in defect.message
    docs = load_markdown_dir(corpus, follow_links=True)  # allowed when asked for
    assert [d.text for d in docs if d.doc_id == "notes"] == [SECRET]


def test_a_link_inside_the_corpus_is_read_and_a_link_through_a_folder_is_named(tmp_path: Path) -> None:
    corpus, outside = _corpus_with_links(tmp_path)
    (corpus / "notes.md").unlink()
    (corpus / "same-starter.md").symlink_to(corpus / "bread-starter.md")  # stays inside: an ordinary document
    assert "same-starter" in {d.doc_id for d in load_markdown_dir(corpus)}
    (corpus / "sub").mkdir()
    (corpus / "sub" / "away").symlink_to(outside.parent)  # a linked folder is not descended into ...
    (corpus / "sub" / "keys.md").symlink_to(corpus / "sub" / "away" / "notes.md")  # ... but a file through it
    with pytest.raises(InvalidInput) as exc:
        load_markdown_dir(corpus)
    [defect] = exc.value.defects
    assert defect.file == str(corpus / "sub" / "keys.md") and str(outside) in defect.message


def test_check_refuses_the_link_naming_it(tmp_path: Path) -> None:
    corpus, outside = _corpus_with_links(tmp_path)
    r = run_cli("tier=corpus", "action=check", f"data.corpus_dir={corpus}", f"data.goldens_dir={FIXTURES / 'goldens'}",
                "suite=mini", f"hydra.run.dir={tmp_path / 'out'}")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and f"{corpus / 'notes.md'}" in out and str(outside) in out
    assert "Traceback" not in out


def test_a_run_refuses_the_link_and_reads_nothing_of_it(make_cfg: Callable[..., DictConfig], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    corpus, outside = _corpus_with_links(tmp_path)
    cfg = make_cfg(f"data.corpus_dir={corpus}", f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini")
    with pytest.raises(SystemExit) as exc:
        run_tier(cfg)
    err = capsys.readouterr().err
    assert exc.value.code != 0 and "outside the corpus folder" in err and str(outside) in err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".sqlite")]
    assert not any("hunter2" in p.read_text(errors="replace") for p in written)
