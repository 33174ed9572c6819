"""model=smollm2's context: the length its GGUF file records, unless model.num_ctx names one; the file's hash."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from nomad_eval.backends.llamacpp import LlamaCppModel, context_length, smollm2_path
from nomad_eval.base.paths import CONF
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI


def _string(s: str) -> bytes:
    return struct.pack("<Q", len(s)) + s.encode()


def test_the_shipped_smollm2_file_says_8192_and_the_default_config_takes_it() -> None:
    assert context_length(smollm2_path()) == 8192
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["model=smollm2"])
    assert cfg.model.num_ctx is None
    assert LlamaCppModel("m", None, cfg.model.num_ctx, 1, 1).num_ctx == 8192
    assert LlamaCppModel("m", None, 1024, 1, 1).num_ctx == 1024  # a number given wins


def test_values_before_the_key_are_skipped_whatever_their_type(tmp_path: Path) -> None:
    kvs = (_string("general.name") + struct.pack("<I", 8) + _string("tiny")
           + _string("tokenizer.tokens") + struct.pack("<IIQ", 9, 8, 2) + _string("a") + _string("bc")
           + _string("general.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 1, 2, 3)
           + _string("llama.context_length") + struct.pack("<II", 4, 4096))
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 4) + kvs)
    assert context_length(path) == 4096
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + _string("general.name") + struct.pack("<I", 8)
                     + _string("tiny"))
    assert context_length(path) is None  # it does not say
    path.write_bytes(b"not a gguf file")
    assert context_length(path) is None


@pytest.mark.slow  # generates with SmolLM2
def test_a_generation_report_names_the_context_it_used(make_cfg: Callable[..., DictConfig]) -> None:
    cfg = make_cfg(*MINI, "tier=generation", "model=smollm2", "mode=e2e", "repeats=1", "limit=1",
                   "tier.max_tokens=8")
    assert run_tier(cfg) == 0
    report = json.loads((Path(cfg.paths.run_dir) / "report.json").read_text())
    assert report["config"]["model"]["num_ctx"] is None and report["system"]["model.num_ctx"] == "8192"


def test_the_gguf_is_hashed_once_per_process_and_again_when_replaced(tmp_path: Path) -> None:
    """The file's hash is a loaded-model fact: a judge and the model on one file hash it once; a file replaced in
    place (other bytes, another time) is another model."""
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    first, second = LlamaCppModel("m", str(path), 512, 1, 1), LlamaCppModel("judge", str(path), 512, 1, 1)
    assert first.served() == second.served() == {"file": "m.gguf", "sha256": first.identity()["sha256"]}
    path.write_bytes(b"GGUF" + b"\1" * 61)
    os.utime(path, ns=(1, 1))
    assert LlamaCppModel("m", str(path), 512, 1, 1).served()["sha256"] != first.served()["sha256"]
