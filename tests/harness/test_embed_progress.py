"""The embedding's progress line counts embedding only: the model's load is timed and named before it starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.harness.index import embed_chunks
from tests.conftest import MINI
from tests.typed_config import runtime


def test_the_model_load_is_a_line_of_its_own_and_only_when_a_vector_is_missing(
        make_cfg: Callable[..., DictConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # progress lines are silent in CI
    data = f"paths.data_dir={tmp_path / 'cold'}"  # an empty embedding cache: the model has to embed every chunk
    rt = runtime(make_cfg(*MINI, data))
    n = len(rt.chunks)
    embed_chunks(rt, quiet=False)
    lines = capsys.readouterr().out.splitlines()
    loads = [i for i, line in enumerate(lines) if line.startswith(f"loading {rt.embedder.name}... ")]
    work = [i for i, line in enumerate(lines) if line.startswith(f"embedding chunks: {n}/{n} in ")]
    assert len(loads) == 1 and work and loads[0] < work[0], lines  # loaded first, then the counted work

    warm = runtime(make_cfg(*MINI, data))  # every vector cached now
    embed_chunks(warm, quiet=False)
    err = capsys.readouterr().out  # progress goes to stdout, so stderr's first line is the verdict's
    assert "loading" not in err and f"embedding chunks: {n}/{n} in " in err
    assert "_model" not in vars(warm.embedder)  # the model was never asked for

    embed_chunks(runtime(make_cfg(*MINI, f"paths.data_dir={tmp_path / 'cold2'}")), quiet=True)
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out == ""  # quiet: neither line


def test_embedding_the_questions_loads_the_model_before_its_progress(
        make_cfg: Callable[..., DictConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported case: a suite's questions embedded in one call, its line counting the model's load."""
    from nomad_eval.tiers.retrieval import _embed_questions

    monkeypatch.delenv("CI", raising=False)
    rt = runtime(make_cfg(*MINI, f"paths.data_dir={tmp_path / 'cold'}"))
    queries = [g.query for g in rt.goldens]
    _embed_questions(rt, queries, quiet=False)
    lines = capsys.readouterr().out.splitlines()
    n = len(queries)
    loads = [i for i, line in enumerate(lines) if line.startswith(f"loading {rt.embedder.name}... ")]
    work = [i for i, line in enumerate(lines) if line.startswith(f"embedding questions: {n}/{n} in ")]
    assert len(loads) == 1 and work and loads[0] < work[0], lines
    _embed_questions(rt, queries, quiet=False)  # every question cached now
    err = capsys.readouterr().out  # progress goes to stdout, so stderr's first line is the verdict's
    assert "loading" not in err and f"embedding questions: {n}/{n} in " in err
