"""pipeline=nomad chunks like upstream NOMAD (3,000 characters, 300 overlap) and says which chunks MiniLM cuts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from tests.conftest import FIXTURES
from tests.typed_config import runtime

SENTENCE = "Keep the {w} dry and check its seals every {n} days before a long trip. "


def doc(name: str, chars: int) -> str:
    body, n = f"# {name}\n\n", 0
    while len(body) < chars:
        n += 1
        body += SENTENCE.format(w=name, n=n) + ("\n\n" if n % 5 == 0 else "")
    return body[:chars]


def test_nomad_preset_makes_upstreams_29_chunks_on_its_corpus_shape(tmp_path: Path,
                                                                    make_cfg: Callable[..., DictConfig]) -> None:
    """Upstream's 28 documents: all but one fit in 3,000 characters; the long one splits in two."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(27):
        (corpus / f"doc-{i:02d}.md").write_text(doc(f"doc{i}", 1200 + 60 * i))  # up to 2,760 characters
    (corpus / "long.md").write_text(doc("long", 4600))
    rt = runtime(make_cfg("pipeline=nomad", f"data.corpus_dir={corpus}"))
    assert (rt.chunker.chunk_size, rt.chunker.overlap) == (3000, 300)
    assert len(rt.chunks) == 29
    long = [c for c in rt.chunks if c.doc_id == "long"]
    assert len(long) == 2 and all(len(c.text) <= 3000 for c in long)
    assert long[0].start + len(long[0].text) - long[1].start >= 250  # the overlap carries about 300 characters
    default = runtime(make_cfg(f"data.corpus_dir={corpus}"))
    assert len(default.chunks) > 29  # the default pipeline's 800-character chunks differ


def test_nomad_preset_warns_about_chunks_minilm_cuts_short(tmp_path: Path, make_cfg: Callable[..., DictConfig],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "long.md").write_text(doc("long", 2900))
    (corpus / "short.md").write_text(doc("short", 400))
    # The tier function itself, not a new process: what is tested is ingest's warning, not the command line.
    assert run_tier(make_cfg("tier=corpus", "action=ingest", "pipeline=nomad", f"data.corpus_dir={corpus}",
                             f"data.goldens_dir={FIXTURES / 'goldens'}", "suite=mini")) == 0
    err = capsys.readouterr().err
    # A 2,900-character document is one chunk under pipeline=nomad, past MiniLM's 256 word pieces: its end is
    # never embedded, and ingest names it; the short one is not named.
    assert "1 chunk(s) exceed the embedder's 256 tokens" in err and "long#0" in err
    assert "short#0" not in err
