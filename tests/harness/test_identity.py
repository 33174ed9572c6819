"""Fingerprints and cache keys move with every setting that changes a vector, and only with those."""

from __future__ import annotations

import inspect
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra.utils import get_class
from omegaconf import DictConfig

from nomad_eval.backends.chat import ChatOptions
from nomad_eval.backends.response_cache import CachedChat, ResponseCache
from nomad_eval.base.paths import REPO
from nomad_eval.base.shipped import build
from nomad_eval.cli.entry import run_tier
from tests.conftest import FIXTURES, MINI
from tests.servers.ollama_compat import serve
from tests.typed_config import runtime

MINI_CORPUS = FIXTURES / "corpus"
# Every key of each embedder config, by whether it changes a stored vector. A key added to conf/embedder/ without
# being classified here fails the test below: the fingerprint's coverage is decided, never assumed.
VECTOR_SETTINGS = {
    "minilm": {"name", "dim", "max_input_tokens", "document_prefix", "query_prefix"},
    "ollama": {"name", "dim", "max_input_tokens", "document_prefix", "query_prefix"},
}
NO_VECTOR_SETTINGS = {
    "minilm": {"batch_size", "threads"},
    # base_url: the digest says which weights answered, wherever the server is; timeouts and batching change
    # nothing embedded; chars_per_token feeds only the truncation warning's estimate; max_response_bytes only
    # refuses an answer past it.
    "ollama": {"base_url", "timeout", "retries", "batch_size", "chars_per_token", "max_response_bytes"},
}
CHUNKER_SETTINGS = {"chunk_size", "chunk_overlap", "whole_document"}
# Pipeline keys that act on queries and rankings, never on what is stored.
NOT_STORED = {"top_k", "candidate_multiplier", "min_final_score", "glossary", "glossary_file", "rerank",
              "term_boost", "keyword_boost", "heading_boost", "same_doc_penalty", "_target_",
              "history", "history_turns"}  # how a conversation becomes the retrieval query


def _group_keys(group: str, name: str) -> set[str]:
    """Every setting of a config group's option: its YAML keys and its class's constructor arguments."""
    raw = yaml.safe_load((REPO / "nomad_eval" / "conf" / group / f"{name}.yaml").read_text())
    params = set(inspect.signature(get_class(raw["_target_"])).parameters) - {"self", "kwargs", "stages"}
    return ({k for k in raw if k != "_target_"} | params)


def _mutated(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return f"{key}={str(not value).lower()}"
    if isinstance(value, int):
        return f"{key}={value + 64}" if "chunk" in key else f"{key}={value // 2}"
    if isinstance(value, float):
        return f"{key}={value * 2}"
    return f"{key}='{value}x'"


def _fake_vectors(dim: int) -> Callable[[list[str]], list[list[float]]]:
    return lambda texts: [[float(len(t) % 7 + 1)] + [0.5] * (dim - 1) for t in texts]


@pytest.mark.slow
@pytest.mark.parametrize("embedder", ["minilm", "ollama"])
def test_every_embedder_and_chunker_setting_is_classified_and_moves_the_fingerprint_iff_it_changes_vectors(
    make_cfg: Callable[..., DictConfig], embedder: str
) -> None:
    keys = _group_keys("embedder", embedder)
    assert keys == VECTOR_SETTINGS[embedder] | NO_VECTOR_SETTINGS[embedder], "unclassified embedder setting"
    assert _group_keys("pipeline", "default") - NOT_STORED == CHUNKER_SETTINGS, "unclassified pipeline setting"
    vec = _fake_vectors(768)
    names = {"nomic-embed-text:v1.5": vec, "nomic-embed-text:v1.5x": vec}
    with serve(names) as url, serve(names) as other_url:
        base = [*MINI, f"embedder={embedder}"] + ([f"embedder.base_url={url}"] if embedder == "ollama" else [])
        cfg0 = make_cfg(*base)
        fp0 = runtime(cfg0).fingerprint
        moved: dict[str, bool] = {}
        for key in sorted(keys):
            default = inspect.signature(get_class(cfg0.embedder._target_)).parameters[key].default
            value = cfg0.embedder.get(key, default)
            override = f"++embedder.base_url={other_url}" if key == "base_url" \
                else "++" + _mutated(f"embedder.{key}", value)
            moved[f"embedder.{key}"] = runtime(make_cfg(*base, override)).fingerprint != fp0
        for key in sorted(CHUNKER_SETTINGS | NOT_STORED - {"_target_", "glossary_file"}):
            moved[f"pipeline.{key}"] = runtime(make_cfg(*base, _mutated(f"pipeline.{key}", cfg0.pipeline[key]))
                                               ).fingerprint != fp0
        for plain in ("quiet=false", "threshold=0.5", "verbose=true", "suite=mini", "repeats=1", "seed=3"):
            moved[plain] = runtime(make_cfg(*base, plain)).fingerprint != fp0
    expected = {f"embedder.{k}": k in VECTOR_SETTINGS[embedder] for k in keys}
    expected |= {f"pipeline.{k}": k in CHUNKER_SETTINGS for k in CHUNKER_SETTINGS | NOT_STORED
                 if k not in ("_target_", "glossary_file")}
    expected |= {p: False for p in ("quiet=false", "threshold=0.5", "verbose=true", "suite=mini", "repeats=1",
                                    "seed=3")}
    assert moved == expected


def test_a_custom_pipelines_unused_embedder_and_chunker_do_not_move_its_fingerprint(
    make_cfg: Callable[..., DictConfig], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(MINI_CORPUS, corpus)
    base = [*MINI, f"data.corpus_dir={corpus}", "pipeline=custom_example"]
    fp0 = runtime(make_cfg(*base)).fingerprint
    for override in ("embedder.max_input_tokens=128", "embedder.query_prefix='q: '", "+pipeline.chunk_size=300"):
        assert runtime(make_cfg(*base, override)).fingerprint == fp0, override
    doc = corpus / "rope-storage.md"
    doc.write_text(doc.read_text() + "\nOne more sentence.\n")
    assert runtime(make_cfg(*base)).fingerprint != fp0  # the documents are what it holds


def test_a_re_pulled_ollama_tag_is_a_new_fingerprint_and_new_cache_keys(make_cfg: Callable[..., DictConfig]) -> None:
    digests = {"minilm:v1.5": "sha256:aaa"}
    calls: list[int] = []

    def vec(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return _fake_vectors(384)(texts)

    with serve({"minilm:v1.5": vec}, digests=digests) as url:
        base = [*MINI, "embedder=ollama", "embedder.name=minilm:v1.5", "embedder.dim=384", f"embedder.base_url={url}"]
        rt = runtime(make_cfg(*base))
        fp_a = rt.fingerprint
        rt.cached_embedder.embed_documents(["one text"])
        rt.cached_embedder.embed_documents(["one text"])
        assert len(calls) == 1  # the second lookup is a cache hit
        digests["minilm:v1.5"] = "sha256:bbb"  # the same tag, pulled again
        rt2 = runtime(make_cfg(*base))
        assert rt2.fingerprint != fp_a
        rt2.cached_embedder.embed_documents(["one text"])
        assert len(calls) == 2  # the old vector does not answer for the new weights


def test_response_cache_key_holds_the_ollama_digest_and_base_url(tmp_path: Path) -> None:
    digests = {"chat:1b": "sha256:one"}
    answers: list[str] = []

    def chat(messages: list[dict[str, str]], options: dict[str, Any]) -> tuple[str, int, int]:
        answers.append("x")
        return f"answer {len(answers)}", 10, 2

    opts = ChatOptions(0.0, 0, 16)
    msgs = [{"role": "user", "content": "hi"}]
    with serve({}, {"chat:1b": chat}, digests=digests) as url, serve({}, {"chat:1b": chat}, digests=digests) as url2:
        cache = ResponseCache(tmp_path / "responses.sqlite")

        def ask(base_url: str) -> str:
            model = build("model", "ollama", name="chat:1b", base_url=base_url, warmup=False, evict_others=False)
            return CachedChat(model, cache).chat(msgs, opts, 0).text

        first = ask(url)
        assert ask(url) == first and len(answers) == 1  # cached
        assert ask(url2) != first  # another server: another key
        digests["chat:1b"] = "sha256:two"
        assert ask(url) not in (first,) and len(answers) == 3  # re-pulled: not answered from the cache


def test_llamacpp_identity_is_the_files_hash(tmp_path: Path) -> None:
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"weights-1")
    b.write_bytes(b"weights-1")
    ida, idb = (build("model", "smollm2", model_path=str(p), num_ctx=2048).identity() for p in (a, b))
    assert ida["sha256"] == idb["sha256"]
    a.write_bytes(b"weights-2")  # replaced in place under the same name
    assert build("model", "smollm2", model_path=str(a), num_ctx=2048).identity()["sha256"] != ida["sha256"]


@pytest.mark.slow
def test_changing_max_input_tokens_changes_the_fingerprint_and_re_embeds(make_cfg: Callable[..., DictConfig]) -> None:
    reports = []
    for tokens in (256, 128):
        cfg = make_cfg(*MINI, f"embedder.max_input_tokens={tokens}",
                       f"paths.run_dir={Path(make_cfg().paths.run_dir)}-{tokens}")
        assert run_tier(cfg) == 0
        reports.append(json.loads((Path(cfg.paths.run_dir) / "report.json").read_text()))
    assert reports[0]["identity"]["fingerprint"] != reports[1]["identity"]["fingerprint"]
    assert reports[1]["counts"]["embedding_model_calls"] > 0
    again = make_cfg(*MINI, "embedder.max_input_tokens=128",
                     f"paths.run_dir={Path(make_cfg().paths.run_dir)}-again")
    assert run_tier(again) == 0
    assert json.loads((Path(again.paths.run_dir) / "report.json").read_text())["counts"]["embedding_model_calls"] == 0
