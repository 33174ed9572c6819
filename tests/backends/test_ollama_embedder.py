"""embedder=ollama through the official client against a loopback Ollama-compatible server running MiniLM."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import NomadError
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI
from tests.servers.ollama_compat import serve

MINILM = build("embedder", "minilm")


def embed(texts: list[str]) -> list[list[float]]:
    return MINILM.embed(texts).tolist()  # type: ignore[no-any-return]


def test_vectors_match_the_model_behind_the_server() -> None:
    with serve({"minilm-test": embed}) as url:
        emb = build("embedder", "ollama", name="minilm-test", dim=384, base_url=url, document_prefix="",
                    query_prefix="")
        got = emb.embed(["boil water for one minute", "store rope in the dark"])
    assert got.shape == (2, 384)
    assert np.allclose(got, MINILM.embed(["boil water for one minute", "store rope in the dark"]), atol=1e-6)


def test_unknown_model_and_dead_server_fail_clearly() -> None:
    with serve({"minilm-test": embed}) as url:
        with pytest.raises(NomadError, match="nomic-embed-text"):
            build("embedder", "ollama", dim=384, base_url=url).embed(["x"])
    t = time.perf_counter()
    with pytest.raises(NomadError, match="127.0.0.1:9"):
        build("embedder", "ollama", base_url="http://127.0.0.1:9", timeout=2).embed(["x"])
    assert time.perf_counter() - t < 3


def test_retrieval_tier_with_ollama_embedder(make_cfg: Callable[..., DictConfig]) -> None:
    with serve({"minilm:v1.5": embed}) as url:
        cfg = make_cfg(*MINI, "embedder=ollama", "embedder.name=minilm:v1.5", "embedder.dim=384",
                       f"embedder.base_url={url}", "embedder.document_prefix=''", "embedder.query_prefix=''")
        assert run_tier(cfg) == 0
    report = json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())
    assert report["identity"]["embedder"] == "minilm:v1.5"
    assert report["metrics"]["hit@5"] == 1.0
    # What the server reports of the model is recorded with the run, for compare to list as settings.
    assert report["system"]["embedder.served.digest"] == "sha256-minilm:v1.5-1"
    assert report["system"]["embedder.served.quantization"] == "Q4_K_M"
    assert report["system"]["embedder.served.context_length"] == "131072"
