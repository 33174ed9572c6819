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

# Top-level keys that never change a measured number, or that belong to the task identity instead.
NOT_SYSTEM = {
    "paths", "quiet", "verbose", "resume", "cache", "compare", "promote", "gate", "matrix", "calibrate", "dataset",
    "trace", "distractor_sets", "hydra", "data", "suite", "tags", "limit", "ablate", "action", "plan",
}
# Keys inside kept groups that name where something lives rather than what it is.
LOCATION_SUFFIXES = ("_dir", "base_url", "timeout", "concurrency")


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
        return
    if isinstance(value, list):
        out[prefix] = ",".join(str(v) for v in value)
        return
    out[prefix] = _file_or_value(value)


def _file_or_value(value: Any) -> str:
    if isinstance(value, str) and value.startswith("/") and len(value) < 4096:
        p = Path(value)
        if p.is_file():
            return f"{p.name} sha256:{hashlib.sha256(p.read_bytes()).hexdigest()[:12]}"
    return str(value)


def system_settings(config: Mapping[str, Any]) -> dict[str, str]:
    """Every setting of the system under test, flat (`pipeline.term_boost`, `threshold`, `model.temperature`)."""
    out: dict[str, str] = {}
    for key, value in config.items():
        if key in NOT_SYSTEM:
            continue
        if key == "tier":  # only the measures (ks) and generation settings; the tier name is task identity
            value = {k: v for k, v in (value or {}).items() if k not in ("name", "_target_", "ks")}
        _flatten(str(key), value, out)
    return {k: v for k, v in out.items() if not k.endswith(LOCATION_SUFFIXES)}


def differences(base: Mapping[str, str], run: Mapping[str, str]) -> list[str]:
    """`key base → run` for every setting that differs, added or removed ones shown as `(unset)`."""
    keys = sorted(base.keys() | run.keys())
    return [f"{k} {base.get(k, '(unset)')} → {run.get(k, '(unset)')}" for k in keys if base.get(k) != run.get(k)]
