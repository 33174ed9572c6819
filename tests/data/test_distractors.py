from __future__ import annotations

import re
from pathlib import Path

from nomad_eval.data.corpus import load_markdown_dir
from nomad_eval.data.distractors import load_distractors, revisions
from tests.conftest import FIXTURES


def test_revisions_change_every_figure_and_keep_the_words() -> None:
    docs = load_markdown_dir(FIXTURES / "corpus")
    revs = revisions(docs, copies=2)
    assert len(revs) == 2 * len(docs) and all(r.distractor for r in revs)
    kettle = next(r for r in revs if r.doc_id == "revisions:kettle-descaling-r1")
    assert "40 minutes" not in kettle.text and "0.8 litre" not in kettle.text
    assert re.search(r"\d+ minutes", kettle.text) and "white vinegar" in kettle.text


def test_a_folder_of_markdown_is_a_distractor_set(tmp_path: Path) -> None:
    (tmp_path / "extra.md").write_text("# Extra\nsomething else")
    (d,) = load_distractors("mine", tmp_path)
    assert d.doc_id == "mine:extra" and d.distractor
