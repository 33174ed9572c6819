"""tier=calibrate: a judge against human labels -> agreement, Cohen's kappa, Spearman, flip rate.

A run writes its result under its run directory only. `calibrate.file=<that run dir>` files it next to the
rubric version (judging.calibration_dir/<rubric>-v<version>--<judge>.json), where a judge gate reads it: a judge
metric can gate only when that report shows enough agreement, so filing one is a decision, never a side effect
(and the default calibration_dir is inside the repository's conf/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.table import Table

from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.base.console import console, progress_bar
from nomad_eval.base.errors import Defect, InvalidInput, NomadError
from nomad_eval.base.safe_names import require_safe
from nomad_eval.harness.rundir import run_dir
from nomad_eval.judges.agreement import agreement, cohen_kappa, flip_rate, spearman
from nomad_eval.judges.judge import judge
from nomad_eval.judges.run_judges import calibration_path, judge_chat, rubrics
from nomad_eval.report.io import write_atomic, write_jsonl
from nomad_eval.report.markdown import fmt


class Label(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    rubric: str | None = None
    question: str
    chunks: list[str]
    answer: str
    label: int = Field(alias="label")


def load_labels(path: Path, scale: list[int]) -> list[Label]:
    defects, out, seen = [], [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            lab = Label.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            defects.append(Defect(str(path), n, f"'{'.'.join(map(str, first['loc']))}': {first['msg']}"))
            continue
        if lab.label not in scale:
            defects.append(Defect(str(path), n, f"label {lab.label} is not on the rubric's scale {scale}", lab.id))
        if lab.id in seen:
            defects.append(Defect(str(path), n, f"duplicate id {lab.id!r}", lab.id))
        seen.add(lab.id)
        out.append(lab)
    if defects:
        raise InvalidInput(defects)
    return out


def file_result(source: Path, calibration_dir: Path) -> Path:
    """Copies a calibrate run's calibration.json to where judge gates read it, under the name the run chose."""
    path = source / "calibration.json" if source.is_dir() else source
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NomadError(f"{path}: no calibration.json here (name a tier=calibrate run directory)", 2) from None
    except (OSError, ValueError) as exc:
        raise NomadError(f"{path}: not a readable calibration result ({exc})", 2) from None
    if not isinstance(result, dict) or not all(k in result for k in ("rubric", "agreement", "n", "filed_as")):
        raise NomadError(f"{path}: not a calibration result (needs rubric, agreement, n and filed_as)", 2)
    name = result["filed_as"]
    require_safe(str(path), file_name=name)  # it becomes a path: nothing in a result may point elsewhere
    target = calibration_dir / str(name)
    write_atomic(target, json.dumps(result, indent=1))
    return target


def run(cfg: DictConfig) -> int:
    if cfg.calibrate.get("file"):
        target = file_result(Path(cfg.calibrate.file), Path(cfg.judging.calibration_dir))
        console.print(f"filed {cfg.calibrate.file} as {target}; judge gates of that rubric and judge model read it")
        return 0
    if not cfg.calibrate.get("labels"):
        raise NomadError("tier=calibrate needs calibrate.labels=<labels.jsonl> and judge=<rubric> (or "
                         "calibrate.file=<a calibrate run dir> to file its result)", 2)
    chosen = rubrics(cfg)
    if len(chosen) != 1:
        raise NomadError("tier=calibrate calibrates one rubric at a time: judge=faithfulness or judge=relevance", 2)
    rubric = chosen[0]
    labels = load_labels(Path(cfg.calibrate.labels), rubric.scale)
    if len(labels) < 25:
        raise NomadError(f"{cfg.calibrate.labels}: {len(labels)} labels; calibration needs at least 25", 2)
    repeats = max(1, int(cfg.calibrate.repeats))
    cache = ResponseCache(Path(cfg.paths.data_dir) / "responses.sqlite") if cfg.get("cache", True) else None
    chat = judge_chat(cfg, cache)
    rows: list[dict[str, Any]] = []
    with progress_bar(f"judging ({rubric.key})", len(labels) * repeats, bool(cfg.quiet)) as prog:
        for lab in labels:
            verdicts = []
            for r in range(repeats):
                j = judge(chat, rubric, lab.question, lab.chunks, lab.answer, int(cfg.seed) + r,
                          int(cfg.judging.retries), int(cfg.judging.max_tokens), repeat=r)
                verdicts.append(j.verdict)
                prog.advance(prog.task_ids[0])
            rows.append({"id": lab.id, "label": lab.label, "verdict": verdicts[0], "verdicts": verdicts})
    judged = [r for r in rows if r["verdict"] is not None]
    human, machine = [r["label"] for r in judged], [r["verdict"] for r in judged]
    graded = len(rubric.scale) > 2
    agree, kappa = agreement(human, machine), cohen_kappa(human, machine)
    rho = spearman(human, machine) if graded else None
    flips = flip_rate([r["verdicts"] for r in rows]) if repeats > 1 else None
    min_agreement = float(cfg.judging.min_agreement)
    calibrated = agree is not None and agree >= min_agreement and len(judged) >= 25
    judge_model = str(cfg.judge.model.name)
    result = {
        "rubric": rubric.key, "labels_file": str(cfg.calibrate.labels), "judge_model": judge_model,
        "n": len(judged), "total": len(rows), "unparseable": len(rows) - len(judged),
        "agreement": agree, "kappa": kappa, "spearman": rho, "flip_rate": flips, "repeats": repeats,
        "min_agreement": min_agreement, "calibrated": calibrated,
        "filed_as": calibration_path(cfg, rubric).name,  # where `calibrate.file=<this run>` puts it
    }
    out = run_dir(cfg)
    write_jsonl(out / "calibration_cases.jsonl", rows)
    write_atomic(out / "calibration.json", json.dumps(result, indent=1))
    if not cfg.quiet:
        t = Table(title=f"calibration of {rubric.key} (judge {judge_model})")
        for c in ("n", "unparseable", "agreement", "kappa", "spearman", "flip_rate", "calibrated"):
            t.add_column(c)
        t.add_row(str(len(judged)), str(len(rows) - len(judged)), fmt(agree), fmt(kappa), fmt(rho), fmt(flips),
                  "yes" if calibrated else "no")
        console.print(t)
        console.print(f"written to {out / 'calibration.json'}; to let judge gates use it: python -m nomad_eval "
                      f"tier=calibrate calibrate.file={out} (files it as {calibration_path(cfg, rubric)})")
    return 0
