"""The system under test as flat settings: what compare lists, baseline value → run value, when two runs differ.

A run's identity splits in two. What it measured *on* (corpus fingerprint, goldens hash, suite, tags, limit,
measures, mode) must match for numbers to be comparable. Everything else that can change a number (pipeline,
model, judge and generation settings) is the system under test: differing is the point of comparing, so it
is recorded here, flat, with files replaced by a hash of their content (a glossary edit is a change; the
same glossary at another path on another machine is not).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nomad_eval.base.json_fields import fields

# The top-level keys that can change each tier's numbers. Everything else is either task identity (data, suite,
# tags, limit, the measured cutoffs), how results are reported (paths, stats, compare, gate), or unused by the
# tier (a retrieval run's chat model).
RETRIEVAL_KEYS = ("embedder", "store", "pipeline", "threshold")
TIER_KEYS = {
    "retrieval": RETRIEVAL_KEYS,
    "generation": (*RETRIEVAL_KEYS, "tier", "mode", "model", "judge", "judging", "repeats", "seed"),
    "app": ("app", "judge", "judging", "repeats", "seed"),  # tier=app: the app is the whole system under test
}
# Keys inside kept groups that name where something lives, how long to wait for it or how many cores it may use,
# rather than what it is.
LOCATION_SUFFIXES = ("_dir", "path", "url", "timeout", "concurrency", "lock_timeout", "threads")


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
        return
    if isinstance(value, list):
        out[prefix] = ",".join(str(v) for v in value)
    elif isinstance(value, str) and value.startswith("/") and len(value) < 4096 and (p := Path(value)).is_file():
        out[prefix] = f"{p.name} sha256:{hashlib.sha256(p.read_bytes()).hexdigest()[:12]}"
    else:
        out[prefix] = str(value)


def system_settings(config: Mapping[str, object], tier: str = "retrieval") -> dict[str, str]:
    """Every setting of the system under test, flat (`pipeline.term_boost`, `threshold`, `model.temperature`)."""
    out: dict[str, str] = {}
    for key in TIER_KEYS.get(tier, RETRIEVAL_KEYS):
        value = config.get(key)
        if key == "tier":  # generation settings only; the tier name and the cutoffs are task identity
            value = {k: v for k, v in fields(value).items() if k not in ("name", "_target_", "ks")}
        _flatten(key, value, out)
    return {k: v for k, v in out.items() if not k.endswith(LOCATION_SUFFIXES)}


def served_settings(group: str, backend: object) -> dict[str, str]:
    """What a model's server reports of it (`model.served.digest`, `embedder.served.quantization`), listed beside
    the settings: a model swapped behind the same name is a changed setting. Nothing for a backend whose
    weights the config alone names (MiniLM, the mock)."""
    served = getattr(backend, "served", None)
    facts: dict[str, str] = served() if callable(served) else {}
    return {f"{group}.served.{k}": v for k, v in facts.items()}


def differences(base: Mapping[str, str], run: Mapping[str, str]) -> list[str]:
    """`key base → run` for every setting that differs, added or removed ones shown as `(unset)`."""
    keys = sorted(base.keys() | run.keys())
    return [f"{k} {base.get(k, '(unset)')} → {run.get(k, '(unset)')}" for k in keys if base.get(k) != run.get(k)]
