"""Each run reads its files afresh: a corpus, suite or glossary changed between two runs of one process is what the
second run sees, in its documents, chunks, fingerprint and the suite's hash."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from nomad_eval.harness.runtime import Runtime, corpus_fingerprint
from nomad_eval.rag.chunking import chunk_corpus
from nomad_eval.rag.pipeline import load_glossary
from tests.conftest import FIXTURES, MINI
from tests.typed_config import runtime


def _fresh(rt: Runtime) -> tuple[str, int]:
    docs = rt.documents
    return corpus_fingerprint(docs, rt.chunker, rt.embedder.identity(), None), len(chunk_corpus(docs, rt.chunker))


def test_a_corpus_file_changed_between_runs_is_read_again(make_cfg: Callable[..., DictConfig],
                                                           tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    cfg = make_cfg(*MINI, f"data.corpus_dir={corpus}")
    first = runtime(cfg)
    assert (first.fingerprint, len(first.chunks)) == _fresh(first)
    again = runtime(cfg)
    assert again.fingerprint == first.fingerprint and again.chunks == first.chunks

    doc = sorted(corpus.glob("*.md"))[0]
    doc.write_text(doc.read_text() + "\nA new paragraph about something else entirely.\n")
    grown = runtime(cfg)
    assert grown.fingerprint != first.fingerprint
    assert (grown.fingerprint, len(grown.chunks)) == _fresh(grown)

    # The same size, another time: still read again.
    text = doc.read_text()
    doc.write_text(text.replace("entirely", "Entirely"))
    st = doc.stat()
    os.utime(doc, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    edited = runtime(cfg)
    assert any("Entirely" in d.text for d in edited.documents)
    assert edited.fingerprint not in (first.fingerprint, grown.fingerprint)


def test_the_suites_hash_follows_its_content(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    goldens = tmp_path / "goldens"
    shutil.copytree(FIXTURES / "goldens", goldens)
    cfg = make_cfg(*MINI, f"data.goldens_dir={goldens}")
    h = runtime(cfg).goldens_hash
    assert runtime(cfg).goldens_hash == h
    suite = goldens / "mini.jsonl"
    lines = suite.read_text().splitlines()
    suite.write_text("\n".join(lines[:-1]) + "\n")
    assert runtime(cfg).goldens_hash != h


def test_a_changed_glossary_is_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "glossary.yaml"
    path.write_text("CO: carbon monoxide\n")
    assert load_glossary(path) == {"CO": "carbon monoxide"}
    path.write_text("CO: carbon monoxide\nUV: ultraviolet\n")
    assert load_glossary(path) == {"CO": "carbon monoxide", "UV": "ultraviolet"}


def test_a_file_that_cannot_be_looked_at_still_gets_the_loaders_message(make_cfg: Callable[..., DictConfig],
                                                                         tmp_path: Path) -> None:
    import pytest

    from nomad_eval.base.errors import InvalidInput

    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURES / "corpus", corpus)
    (corpus / "broken.md").symlink_to(corpus / "nowhere.md")  # inside the corpus folder, dangling
    with pytest.raises(InvalidInput, match="broken.md: not a regular file"):
        _ = runtime(make_cfg(*MINI, f"data.corpus_dir={corpus}")).corpus_documents
