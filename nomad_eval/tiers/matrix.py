"""The model capability matrix: each model's oracle / e2e / gap / refusal / leakage / groundedness row.

`tier=matrix model=mock,smollm2,ollama -m` runs every model through all three modes; the sweep's end
callback assembles the rows into matrix.json and matrix.md. `matrix.lookup.score=<s>` tells whether a
score someone reports sits at a model's row or well below it.
"""

from __future__ import annotations

import json
from pathlib import Path

from nomad_eval.base.console import console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.runfolder import seal
from nomad_eval.config import RunConfig
from nomad_eval.config.groups import Mode
from nomad_eval.config.settings import runtime
from nomad_eval.gate.store import baseline_path
from nomad_eval.harness.rundir import run_dir
from nomad_eval.report.io import write_atomic
from nomad_eval.report.matrix import ROW_FILE, MatrixRow, figure, matrix_row
from nomad_eval.run.registry import tier_run


def lookup(rows: list[MatrixRow], model: str, score: float, column: str, margin: float) -> str:
    row = next((r for r in rows if r["model"] == model), None)
    if row is None:
        raise NomadError(f"no matrix row for model {model!r}; rows: {', '.join(r['model'] for r in rows)}", 2)
    expected = figure(row, column)
    if expected is None:
        return f"{model}: the matrix has no {column} figure"
    if score > expected + margin:
        return (f"{model}: {column} {score:.3f} is above its row ({expected:.3f}, margin {margin}): better than the "
                "matrix recorded; if this holds, re-run the matrix and promote it so the row says so")
    if score >= expected - margin:
        return (f"{model}: {column} {score:.3f} sits at its row ({expected:.3f}): this is what the model can do; "
                "a better answer needs a stronger model, not a code change")
    return (f"{model}: {column} {score:.3f} is well below its row ({expected:.3f}, margin {margin}): look for a "
            "regression in retrieval, prompt or configuration before blaming the model")


def answers_config(config: RunConfig) -> RunConfig:
    """The generation run a matrix column is: every mode, under the generation tier's name."""
    mode = Mode(name="all", modes=("oracle", "e2e", "noretrieval"))
    tier = config.tier.model_copy(update={"name": "generation"})
    recorded = {**config.recorded, "mode": mode.model_dump(mode="json"),
                "tier": {**config.recorded["tier"], "name": "generation"}}  # type: ignore[dict-item]
    return config.model_copy(update={"mode": mode, "tier": tier, "recorded": recorded})


def run(config: RunConfig) -> int:
    lk = config.matrix.lookup
    if lk.score is not None:
        rt = runtime(config)
        path = baseline_path(Path(config.paths.baselines_dir), rt.fingerprint, "matrix")
        if not path.exists():
            raise NomadError(f"no matrix baseline at {path}; run tier=matrix model=... -m and promote it", 2)
        rows = json.loads(path.read_text())["rows"]
        model = lk.model or config.model.name
        console.print(lookup(rows, model, lk.score, str(lk.column), float(lk.margin)))
        return 0
    code = tier_run("generation")(answers_config(config))  # the generation tier, found by name (run/registry.py)
    out = run_dir(config.paths.run_dir)
    report = json.loads((out / "report.json").read_text())
    if report.get("status") == "ok":
        write_atomic(out / ROW_FILE, json.dumps(matrix_row(report), indent=1))
        seal(out)  # the row is part of the run
    return code
