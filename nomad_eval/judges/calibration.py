"""Which calibration speaks for a judge, and whether it lets that judge gate.

A calibration holds for one rubric version, one judge (backend, model name and weights: the GGUF file's sha256
for llama.cpp, the server's digest for Ollama) and one labels file (its sha256). It is filed under all of them,
and a gate accepts only a calibration whose judge matches the configured one and whose labels file still hashes
as it did: relabelling an example, or swapping the judge's weights under the same name, makes it stale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,  # read by pydantic inside a report model
)

from nomad_eval.backends.base import Identity
from nomad_eval.base.atomic import JsonObject
from nomad_eval.base.identity import file_sha256
from nomad_eval.base.json_fields import fields, number
from nomad_eval.base.paths import project_dir, slug
from nomad_eval.records.sections import CalibrationStatus


# What judging reads from a run's config, typed: built from the run config (config/settings.py).
@dataclass(frozen=True)
class JudgingRules:
    """When a calibration lets its judge gate (judging.* in the config)."""

    min_agreement: float
    gate_on: str                            # "point", or "lower_bound": the interval's worse end
    max_order_flip_rate: float | None
    max_verbosity_shift: float | None
    min_abstention_faithful: float | None

    def limit(self, setting: str) -> float | None:
        value = getattr(self, setting)
        return None if value is None else float(value)


@dataclass(frozen=True)
class JudgeSettings:
    model: Mapping[str, object]             # the judge's backend: `_target_` and arguments
    model_name: str
    rubrics: tuple[str, ...]
    rubrics_dir: Path
    calibration_dir: Path
    rules: JudgingRules
    seed: int
    retries: int
    max_tokens: int
    quiet: bool
    generator: str | None                   # the generating model's name: a judge of its family is warned about
    fail_under: Mapping[str, float]          # the gate's floors: a judge metric among them needs a calibration


MIN_LABELS = 25
# What must match between the calibrated judge and the configured one. An OpenAI-compatible server reports no
# weights digest, so there backend and model name are all there is to match on.
MATCH_KEYS = ("backend", "model", "sha256", "digest")
# The bias battery's figures (judges/battery.py), as stored under a calibration's "battery".
BATTERY_FIGURES = ("order_flip", "verbosity_shift", "abstention_faithful")


def judge_identity(identity: Identity) -> Identity:
    """The part of a chat backend's identity() a calibration is filed under (plus the model file's name)."""
    return {k: identity[k] for k in (*MATCH_KEYS, "file") if identity.get(k) is not None}


def describe_judge(judge: Mapping[str, object]) -> str:
    weights = next((f"{k} {str(judge[k])[:12]}" for k in ("sha256", "digest") if judge.get(k)), "no weights digest")
    return f"{judge.get('backend')} {judge.get('model')} ({weights})"


def labels_ref(path: Path) -> dict[str, str]:
    """The labels file as the calibration names it: project-relative when inside the project (so a filed
    calibration reads the same on every clone), absolute otherwise, with its sha256."""
    full, project = path.resolve(), project_dir()
    shown = full.relative_to(project).as_posix() if full.is_relative_to(project) else str(full)
    return {"file": shown, "sha256": file_sha256(str(full))}


def labels_location(shown: str) -> Path:
    p = Path(shown)
    return p if p.is_absolute() else project_dir() / p


def filed_name(rubric_key: str, judge: Mapping[str, object], labels_sha256: str) -> str:
    weights = next((str(judge[k])[:12] for k in ("sha256", "digest") if judge.get(k)), None)
    parts = [rubric_key, str(judge.get("backend")), slug(str(judge.get("model"))),
             *([slug(weights)] if weights else []), f"labels-{labels_sha256[:12]}"]
    return "--".join(parts) + ".json"


def model_family(name: str) -> str:
    """The leading letters of a model's name after any path: smollm2-135m -> smollm, qwen3:8b -> qwen."""
    base = name.lower().rsplit("/", 1)[-1]
    m = re.match(r"[a-z]+", base)
    return m.group(0) if m else base


def same_family_warning(judge_model: str, generators: list[str]) -> str | None:
    """A judge rates its own family's answers more kindly (self-preference): worth a warning, not a refusal."""
    family = model_family(judge_model)
    same = sorted({g for g in generators if model_family(g) == family})
    if not same:
        return None
    return (f"judge {judge_model} and generator {', '.join(same)} are the same model family ({family}): "
            "a judge tends to prefer its own family's answers")


def find_calibration(calibration_dir: Path, rubric_key: str, judge: Mapping[str, object]
                     ) -> tuple[JsonObject | None, str]:
    """The latest calibration filed for this rubric version and judge whose labels file is unchanged, or None
    and why none qualifies."""
    filed = []
    for path in sorted(calibration_dir.glob(f"{rubric_key}--*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("judge"), dict) and isinstance(data.get("labels"), dict):
            filed.append((path, data))
    if not filed:
        return None, f"no calibration of {rubric_key} in {calibration_dir}"
    want = {k: judge.get(k) for k in MATCH_KEYS}
    mine = [(p, d) for p, d in filed if {k: d["judge"].get(k) for k in MATCH_KEYS} == want]
    if not mine:
        others = "; ".join(sorted({describe_judge(d["judge"]) for _, d in filed}))
        return None, (f"no calibration of {rubric_key} for judge {describe_judge(judge)} in {calibration_dir} "
                      f"(calibrated there: {others})")
    current, stale = [], []
    for path, data in mine:
        where = labels_location(str(data["labels"].get("file")))
        now = file_sha256(str(where)) if where.is_file() else None
        then = str(data["labels"].get("sha256"))
        if now == then:
            current.append((path, data))
        elif now is None:
            stale.append(f"its labels file {where} is gone")
        else:
            stale.append(f"the labels file {where} has changed since {path.name} was calibrated on it "
                         f"(sha256 {then[:12]} then, {now[:12]} now)")
    if not current:
        return None, "; ".join(stale) + ": recalibrate on the labels as they are"
    path, data = max(current, key=lambda pd: (str(pd[1].get("created", "")), pd[0].name))
    return {**data, "path": str(path)}, ""


def _pessimistic(fig: Mapping[str, object], end: str, lower_bound: bool) -> float | None:
    """The figure's point, or under gate_on=lower_bound its interval's worse end (`low` or `high`)."""
    return number(fig.get(end) if lower_bound else fig.get("value"))


def gate_rule(cal: Mapping[str, object], judging: JudgingRules) -> tuple[bool, str]:
    """Whether a calibration (as its file holds it) lets its judge gate: agreement (unparseable verdicts counted
    as misses) of at least judging.min_agreement on at least 25 labels, and every battery threshold that is set."""
    lower = judging.gate_on == "lower_bound"
    need = judging.min_agreement
    got = _pessimistic(fields(cal.get("agreement")), "low", lower)
    n = int(number(cal.get("n")) or 0)
    what = "the lower end of the 95% interval of agreement" if lower else "agreement"
    if n < MIN_LABELS:
        return False, f"{n} labels: a gate needs a calibration on at least {MIN_LABELS}"
    if got is None or got < need:
        shown = "none" if got is None else f"{got:.3f}"
        return False, (f"{what} {shown} on {n} labels (unparseable verdicts counted as misses) is below "
                       f"judging.min_agreement={need}")
    return _battery_rule(fields(cal.get("battery")), judging, lower)


_BATTERY_CHECKS = (("order_flip", "max_order_flip_rate", "high", "order flip rate", False),
                   ("verbosity_shift", "max_verbosity_shift", "abs", "verbosity shift", False),
                   ("abstention_faithful", "min_abstention_faithful", "low", "abstention judged faithful", True))


def _battery_rule(battery: Mapping[str, object], judging: JudgingRules, lower: bool) -> tuple[bool, str]:
    """Every battery threshold that is set, on the figure the calibration measured for it."""
    for key, setting, end, label, at_least in _BATTERY_CHECKS:
        limit = judging.limit(setting)
        if limit is None or key not in battery:  # not gated, or not a figure of this rubric
            continue
        got = _battery_figure(fields(battery[key]), end, lower)
        if got is None:
            return False, f"judging.{setting} is set but the calibration has no {label} (calibrate.battery_size=0?)"
        if (got < float(limit)) if at_least else (got > float(limit)):
            return False, f"{label} {got:.3f} {'is below' if at_least else 'exceeds'} judging.{setting}={limit}"
    return True, ""


def _battery_figure(fig: Mapping[str, object], end: str, lower: bool) -> float | None:
    """The figure a threshold reads: `abs` takes the larger size of either end (or of the point)."""
    if end != "abs":
        return _pessimistic(fig, end, lower)
    ends = [number(fig.get("low")), number(fig.get("high"))] if lower else [number(fig.get("value"))]
    sizes = [abs(float(e)) for e in ends if e is not None]
    return max(sizes) if len(sizes) == len(ends) else None


def fmt_figure(fig: Any, signed: bool = False) -> str:
    value = fig.get("value") if isinstance(fig, dict) else None
    if value is None:
        return "—"
    spec = "+.2f" if signed else ".2f"
    low, high = fig.get("low"), fig.get("high")
    ci = f" [{low:{spec}}, {high:{spec}}]" if low is not None and high is not None else ""
    return f"{value:{spec}}{ci}"


def status_line(status: CalibrationStatus, decision: bool = True) -> str:
    """For reports: the gate's decision (unless `decision` is False), the calibration's figures, any warning."""
    parts = []
    if status.get("agreement") is not None:
        parts.append(f"agreement {fmt_figure(status['agreement'])} on {status.get('n')} labels, coverage "
                     f"{fmt_figure(status.get('coverage'))}, kappa {fmt_figure(status.get('kappa'))}")
    battery = status.get("battery") or {}
    names = (("order_flip", "order flips", False), ("verbosity_shift", "verbosity shift", True),
             ("abstention_faithful", "declines judged faithful", False))
    shown = [f"{label} {fmt_figure(battery[k], signed)}" for k, label, signed in names if k in battery]
    if shown:
        parts.append(", ".join(shown))
    parts += [f"warning: {w}" for w in status.get("warnings", [])]
    if not decision:
        return "; ".join(parts)
    head = "yes" if status.get("calibrated") else f"no — {status.get('reason')}"
    return head + (f" ({'; '.join(parts)})" if parts else "")
