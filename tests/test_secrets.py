"""No file a run or a promote writes holds a secret: environment values and credentials are redacted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from nomad_eval.base.secrets import REDACTED, redact, redact_override
from nomad_eval.cli.entry import run_tier
from tests.conftest import MINI, run_cli

KEY = "sk-test-PLANTED-7f3a9c01e4"


def test_redact_keeps_interpolations_and_hides_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMAD_TEST_KEY", KEY)
    cfg = OmegaConf.create({
        "model": {"api_key": "${oc.env:NOMAD_TEST_KEY}", "base_url": "http://h/${oc.env:NOMAD_TEST_KEY}",
                  "max_tokens": 64, "name": "m"},
        "judge": {"model": {"api_key": "${model.api_key}", "token": "literal-secret", "copy": "${model.api_key}"}},
        "store": {"api_key": None, "password": ""},
        "paths": ["${oc.env:NOMAD_TEST_KEY}", "plain"],
    })
    unresolved = OmegaConf.to_container(cfg, resolve=False)
    out = redact(unresolved, OmegaConf.to_container(cfg, resolve=True))
    assert out == {
        "model": {"api_key": "${oc.env:NOMAD_TEST_KEY}", "base_url": "http://h/${oc.env:NOMAD_TEST_KEY}",
                  "max_tokens": 64, "name": "m"},  # max_tokens is not a credential
        # reached through another interpolation: the value is the environment's, so the interpolation stays
        "judge": {"model": {"api_key": "${model.api_key}", "token": REDACTED, "copy": "${model.api_key}"}},
        "store": {"api_key": None, "password": ""},  # nothing set, nothing to hide
        "paths": ["${oc.env:NOMAD_TEST_KEY}", "plain"],
    }
    assert KEY not in str(out) and unresolved == OmegaConf.to_container(cfg, resolve=False)  # pure
    assert redact_override(f"model.api_key={KEY}") == f"model.api_key={REDACTED}"
    assert redact_override("+store.api_key=${oc.env:K}") == "+store.api_key=${oc.env:K}"
    assert redact_override("pipeline.max_tokens=5") == "pipeline.max_tokens=5"


def _files_holding(root: Path, needle: str) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, root
    return [p for p in files if needle.encode() in p.read_bytes()]


@pytest.mark.slow
def test_no_written_file_holds_an_environment_key(tmp_path: Path, data_dir: Path,
                                                  make_cfg: Callable[..., DictConfig],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run through the CLI (Hydra writes .hydra/ and its log too), then a promote of it."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run = tmp_path / "run"
    env = "${oc.env:OPENAI_API_KEY}"
    r = run_cli(*MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true", "model=openai",
                f"model.api_key={env}", "model@judge.model=openai", f"judge.model.api_key={env}",
                f"model.base_url=http://127.0.0.1:9/v1/{env}")  # in a key not named like a credential too
    assert r.returncode == 0, r.stderr
    assert (run / ".hydra" / "config.yaml").exists() and (run / "report.html").exists()
    assert f'"api_key": "{env}"' in (run / "report.json").read_text()  # where the value came from is kept
    baselines = tmp_path / "baselines"
    assert run_tier(make_cfg("tier=promote", f"promote.run={run}", f"paths.baselines_dir={baselines}")) == 0
    assert f'"api_key": "{env}"' in next(baselines.rglob("retrieval.json")).read_text()
    assert KEY not in r.stdout + r.stderr
    assert _files_holding(run, KEY) == [] and _files_holding(baselines, KEY) == []
