"""Compare a run with a baseline: pure logic over reports and per-case metrics, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nomad_eval.compare.bootstrap import paired_bootstrap_ci
from nomad_eval.metrics.registry import spec_for
from nomad_eval.report.schema import Report

# Identity fields whose difference makes two runs incomparable, with the flag a user would change.
IDENTITY_FIELDS = ("goldens_hash", "suite", "tags", "limit", "top_k", "threshold", "min_final_score", "mode",
                   "model", "embedder", "judges")


@dataclass(frozen=True)
class MetricDelta:
    name: str
    baseline: float | None
    current: float | None
    tolerance: str
    regressed: bool
    ci: tuple[float, float] | None = None

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


@dataclass
class Verdict:
    refused: list[str] = field(default_factory=list)
    deltas: list[MetricDelta] = field(default_factory=list)
    newly_failing: list[str] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[MetricDelta]:
        return [d for d in self.deltas if d.regressed]

    @property
    def exit_code(self) -> int:
        if self.refused:
            return 2
        return 1 if self.regressions else 0


def case_key(c: dict[str, Any]) -> str:
    """Generation cases repeat a question per mode and repeat; retrieval cases are one per question."""
    return f"{c['mode']}:{c['id']}#{c.get('repeat', 0)}" if "mode" in c else str(c["id"])


def identity_differences(run: Report, base: Report) -> list[str]:
    if run.identity is None or base.identity is None:
        return ["one of the reports has no identity (a failed run?)"]
    if run.identity.fingerprint != base.identity.fingerprint:
        return [f"fingerprint differs: run {run.identity.fingerprint}, baseline {base.identity.fingerprint} "
                "(corpus, chunker or embedder changed); promote a new baseline for this fingerprint"]
    if run.tier != base.tier:
        return [f"tier differs: run {run.tier}, baseline {base.tier}"]
    a, b = run.identity.model_dump(), base.identity.model_dump()
    return [f"{k} differs: run {a[k]!r}, baseline {b[k]!r}" for k in IDENTITY_FIELDS if a.get(k) != b.get(k)]


def _tolerance_text(name: str) -> str:
    spec = spec_for(name)
    if spec is None:
        return "—"
    return f"±{spec.tolerance:g}" if spec.tolerance_kind == "abs" else f"±{spec.tolerance:.0%}"


def compare(
    run: Report, base: Report, run_cases: list[dict[str, Any]] | None, base_cases: list[dict[str, Any]] | None,
    resamples: int = 1000,
) -> Verdict:
    verdict = Verdict(refused=identity_differences(run, base))
    if verdict.refused:
        return verdict
    run_by_id = {case_key(c): c for c in run_cases or []}
    base_by_id = {case_key(c): c for c in base_cases or []}
    unstable = {i for i, c in run_by_id.items() if c.get("unstable")} | {
        i for i, c in base_by_id.items() if c.get("unstable")}
    verdict.unstable = sorted({i.split("#")[0] for i in unstable})
    for name, cur in run.metrics.items():
        spec = spec_for(name)
        if spec is None or name not in base.metrics:
            continue
        old = base.metrics[name]
        regressed = old is not None and cur is not None and spec.regressed(old, cur)
        ci = None
        if run_by_id and base_by_id:
            metric = name.split(".", 1)[1] if "." in name else name  # "e2e.correctness" -> per-case "correctness"
            mode = name.split(".", 1)[0] if "." in name else None
            keys = [i for i in sorted(run_by_id.keys() & base_by_id.keys())
                    if i not in unstable and (mode is None or run_by_id[i].get("mode") == mode)]
            pairs = [(base_by_id[i]["metrics"].get(metric), run_by_id[i]["metrics"].get(metric)) for i in keys]
            pairs = [(b, c) for b, c in pairs if b is not None and c is not None]
            ci = paired_bootstrap_ci([b for b, _ in pairs], [c for _, c in pairs], resamples) if pairs else None
        verdict.deltas.append(MetricDelta(name, old, cur, _tolerance_text(name), regressed, ci))
    for i in sorted(run_by_id.keys() & base_by_id.keys()):
        if i not in unstable and base_by_id[i].get("passed") is True and run_by_id[i].get("passed") is False:
            verdict.newly_failing.append(i.split("#")[0])
    verdict.newly_failing = sorted(set(verdict.newly_failing))
    return verdict
