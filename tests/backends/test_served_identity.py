"""What a model's server reports of the model: in the response cache's key (a model swapped behind the same name
is asked again, never answered with the earlier model's cached answers), recorded with every run, and listed by
compare as a changed setting. Loopback servers stand in for an OpenAI-compatible server and for Ollama."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI
from tests.servers import ollama_compat, openai_compat

GEN = (*MINI, "tier=generation", "mode=noretrieval", "repeats=1")


def _report(cfg: DictConfig) -> dict[str, Any]:
    return json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())  # type: ignore[no-any-return]


def _run(make: Callable[..., DictConfig], run: Path, *overrides: str) -> dict[str, Any]:
    cfg = make(*GEN, *overrides, f"paths.run_dir={run}")
    assert run_tier(cfg) == 0
    return _report(cfg)


def test_a_model_swapped_behind_the_same_name_is_asked_again_and_named(
        tmp_path: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]) -> None:
    served = {"system_fingerprint": "fp_4f2a"}
    asked: list[str] = []

    def answer(body: dict[str, Any]) -> str:
        asked.append(body["messages"][-1]["content"])
        return "Let it stand for 40 minutes."

    with openai_compat.serve("m", answer, served=served) as url:
        model = ("model=openai", "model.name=m", f"model.base_url={url}")
        first = _run(make_cfg, tmp_path / "first", *model)
        total = first["counts"]["model_calls"]
        assert first["system"]["model.served.system_fingerprint"] == "fp_4f2a"
        again = _run(make_cfg, tmp_path / "again", *model)
        # Unchanged: the first answer is asked live (it says what is served now), the rest come from the cache.
        assert again["counts"]["model_calls"] == 1 and again["counts"]["cache_hits"] == total - 1
        served["system_fingerprint"] = "fp_9c1b"  # another model behind the same name and URL
        swapped = _run(make_cfg, tmp_path / "swapped", *model)
    assert swapped["counts"]["model_calls"] == total and swapped["counts"]["cache_hits"] == 0
    assert len(asked) == 2 * total + 1
    capsys.readouterr()
    cfg = make_cfg(*GEN, "tier=compare", f"compare.run={tmp_path / 'swapped'}",
                   f"compare.baseline={tmp_path / 'first' / 'report.json'}")
    run_tier(cfg)
    assert "model.served.system_fingerprint fp_4f2a → fp_9c1b" in capsys.readouterr().out


def test_a_server_that_reports_no_fingerprint_is_trusted_by_name_and_says_so(
        tmp_path: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]) -> None:
    with openai_compat.serve("m", lambda body: "Forty minutes.") as url:
        report = _run(make_cfg, tmp_path / "run", "model=openai", "model.name=m", f"model.base_url={url}")
    assert "cached answers are trusted by the model's name only" in capsys.readouterr().err
    assert report["system"]["model.served.system_fingerprint"] == "(not reported)"
    assert report["system"]["model.served.model"] == "m"


def test_an_ollama_model_re_pulled_under_its_tag_is_a_changed_setting(
        tmp_path: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]) -> None:
    digests = {"llama3.2:3b": "sha256-4f2a"}
    calls: list[int] = []

    def chat(messages: list[dict[str, str]], options: dict[str, Any]) -> tuple[str, int, int]:
        calls.append(1)
        return "Forty minutes.", 10, 3

    with ollama_compat.serve({}, {"llama3.2:3b": chat}, digests=digests) as url:
        model = ("model=ollama", "model.name=llama3.2:3b", f"model.base_url={url}", "model.warmup=false",
                 "model.evict_others=false")
        first = _run(make_cfg, tmp_path / "first", *model)
        assert {k: v for k, v in first["system"].items() if k.startswith("model.served.")} == {
            "model.served.digest": "sha256-4f2a", "model.served.quantization": "Q4_K_M",
            "model.served.parameters": "3.2B", "model.served.context_length": "131072"}
        n = len(calls)
        digests["llama3.2:3b"] = "sha256-9c1b"
        digests["llama3.2:3b/q"] = "Q8_0"
        _run(make_cfg, tmp_path / "second", *model)
    assert len(calls) == 2 * n  # the re-pulled tag is another model: nothing answered from the cache
    capsys.readouterr()
    run_tier(make_cfg(*GEN, "tier=compare", f"compare.run={tmp_path / 'second'}",
                      f"compare.baseline={tmp_path / 'first' / 'report.json'}"))
    out = capsys.readouterr().out
    assert "model.served.digest sha256-4f2a → sha256-9c1b" in out and "model.served.quantization Q4_K_M → Q8_0" in out
