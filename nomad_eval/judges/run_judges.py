"""Judging a generation run's cases, and the calibration gate that decides whether a judge may gate CI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig

from nomad_eval.backends.cached_chat import CachedChat
from nomad_eval.backends.response_cache import ResponseCache
from nomad_eval.base.console import progress_bar
from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import slug
from nomad_eval.judges.judge import Judgement, judge
from nomad_eval.judges.rubric import Rubric, load_rubric


def rubrics(cfg: DictConfig) -> list[Rubric]:
    folder = Path(cfg.judging.rubrics_dir)
    return [load_rubric(folder, str(name)) for name in cfg.judge.rubrics]


def judge_chat(cfg: DictConfig, cache: ResponseCache | None) -> CachedChat:
    model = instantiate(cfg.judge.model)
    model.preflight()
    return CachedChat(model, cache)


def by_rule(rubric: Rubric, case: dict[str, Any]) -> Judgement | None:
    """Decisions that need no judge: a statement of inability to answer is always faithful."""
    if rubric.name == "faithfulness" and case["refused"]:
        return Judgement(max(rubric.scale), "a refusal makes no claim", 0, by_rule=True)
    if rubric.name == "relevance" and case["expect_refusal"] and case["refused"]:
        return Judgement(None, "a correct refusal has no question to address", 0, by_rule=True)
    return None


def judge_cases(cfg: DictConfig, cases: list[dict[str, Any]], passages: list[list[str]], chat: CachedChat
                ) -> dict[str, dict[str, Any]]:
    """Adds `judges` to each case; returns the report section, keyed "<mode>.<rubric>"."""
    section: dict[str, dict[str, Any]] = {}
    chosen = rubrics(cfg)
    with progress_bar("judging", len(chosen) * len(cases), bool(cfg.quiet)) as prog:
        for rubric in chosen:
            _judge_rubric(cfg, rubric, cases, passages, chat, section, lambda: prog.advance(prog.task_ids[0]))
    for s in section.values():
        vals = s.pop("values")
        s["n"] = len(vals)
        s["mean"] = sum(vals) / len(vals) if vals else None
    return section


def _judge_rubric(cfg: DictConfig, rubric: Rubric, cases: list[dict[str, Any]], passages: list[list[str]],
                  chat: CachedChat, section: dict[str, dict[str, Any]], tick: Any) -> None:
    cal = calibration_status(cfg, rubric)
    for case, texts in zip(cases, passages, strict=True):
        tick()
        j = by_rule(rubric, case) or judge(chat, rubric, case["query"], texts, case["answer"], int(cfg.seed),
                                            int(cfg.judging.retries), int(cfg.judging.max_tokens),
                                            case["repeat"])
        case.setdefault("judges", {})[rubric.name] = j.verdict
        key = f"{case['mode']}.{rubric.name}"
        s = section.setdefault(key, {"rubric": rubric.key, "values": [], "unparseable": 0, "rejected": 0,
                                     "by_rule": 0, "calibration": cal})
        if j.by_rule:
            s["by_rule"] += 1
        elif j.rejected:
            s["rejected"] += 1
        elif j.verdict is None:
            s["unparseable"] += 1
        if j.verdict is not None:
            s["values"].append(j.verdict / max(rubric.scale))


def calibration_path(cfg: DictConfig, rubric: Rubric) -> Path:
    """Next to the rubric version, per judge model: a calibration speaks for one rubric and one judge."""
    return Path(cfg.judging.calibration_dir) / f"{rubric.key}--{slug(str(cfg.judge.model.name))}.json"


def calibration_status(cfg: DictConfig, rubric: Rubric) -> dict[str, Any]:
    path = calibration_path(cfg, rubric)
    if not path.exists():
        return {"calibrated": False, "reason": f"no calibration report for {rubric.key} at {path}"}
    data = json.loads(path.read_text())
    need = float(cfg.judging.min_agreement)
    ok = data.get("agreement") is not None and data["agreement"] >= need and data.get("n", 0) >= 25
    why = "" if ok else (f"agreement {data.get('agreement')} on {data.get('n')} labels is below {need} "
                         "(or fewer than 25 labels)")
    return {"calibrated": ok, "agreement": data.get("agreement"), "kappa": data.get("kappa"), "reason": why}


def check_judge_gates(cfg: DictConfig) -> None:
    """A judge metric may gate only when its latest calibration agrees with humans; refuse before any work."""
    floors = cfg.gate.get("fail_under") or {}
    for name in floors:
        if not str(name).startswith("judge."):
            continue
        rubric_name = str(name).rsplit(".", 1)[-1]
        if rubric_name not in cfg.judge.rubrics:
            raise NomadError(f"gate on {name} refused: judge {rubric_name!r} is not enabled (judge={rubric_name})", 2)
        status = calibration_status(cfg, load_rubric(Path(cfg.judging.rubrics_dir), rubric_name))
        if not status["calibrated"]:
            raise NomadError(f"gate on {name} refused: the judge is not calibrated — {status['reason']}. "
                             f"Run tier=calibrate judge={rubric_name} calibrate.labels=<labels.jsonl> first.", 2)


def judge_floor_failures(judges: dict[str, dict[str, Any]], floors: dict[str, float]) -> list[str]:
    out = []
    for name, floor in floors.items():
        if not name.startswith("judge."):
            continue
        entry = judges.get(name.removeprefix("judge."))
        value = entry.get("mean") if entry else None
        if value is None:
            out.append(f"{name} could not be measured in this run (floor {floor})")
        elif value < floor:
            out.append(f"{name} = {value:.4f} is below its floor {floor}")
    return out
