"""Reading reports written by an older schema, one way: what version 1 kept flat beside the envelope moves under
`details` (report/details.py), value for value, and nothing writes version 1 again. Baselines hold a report, so a
committed baseline reads through here too. Old metric names are read by report/renamed.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CURRENT = 2  # report/schema.py's SCHEMA_VERSION

# Version 1's flat field -> its place in version 2's details, per kind of details (absent: that kind has none).
_MOVED: dict[str, dict[str, str]] = {
    "retrieval": {"separation": "separation", "ablation": "ablation"},
    "generation": {"unstable": "unstable", "infra": "infra", "judges": "judges", "judge_corrected": "judge_corrected",
                   "causes": "causes", "attacks": "attacks", "repeats_reason": "repeats_reason",
                   "decomposition": "decomposition", "mock_line": "mock_line", "chars_per_token": "chars_per_token",
                   "position": "position", "sizes": "sizes", "adaptive": "adaptive"},
    "app": {"unstable": "unstable", "infra": "infra", "judges": "judges", "judge_corrected": "judge_corrected",
            "causes": "causes", "attacks": "attacks", "repeats_reason": "repeats_reason",
            "served_index": "served_index"},
    "position": {"position_curve": "curve", "chars_per_token": "chars_per_token"},
}
_FLAT = {old for fields in _MOVED.values() for old in fields}
_EMPTY_IS_NONE = {"decomposition", "position", "served_index"}


def upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A report's JSON as the current schema reads it: unchanged unless it says it is of an older version."""
    version = data.get("schema_version")
    if not isinstance(version, int) or version >= CURRENT:
        if stale := sorted(_FLAT & data.keys()):  # a writer not yet moved to details: say so, never drop it
            raise ValueError(f"{stale[0]}: a version-1 field; since version {CURRENT} it is under `details`")
        return data
    out = {k: v for k, v in data.items() if k not in _FLAT}
    out["schema_version"] = CURRENT
    kind = _kind(data)
    if kind is not None and data.get("status", "ok") == "ok":
        details: dict[str, Any] = {"tier": kind}
        for old, new in _MOVED[kind].items():
            if old in data:
                details[new] = data[old]
        for name in _EMPTY_IS_NONE & details.keys():
            if details[name] == {}:  # version 1 wrote {} for "not measured" (e.g. not all three modes)
                details[name] = None
        out["details"] = details
    return out


def _kind(data: Mapping[str, object]) -> str | None:
    """Which details a version-1 report had: its tier's, except that tier=app wrote `tier: generation`."""
    tier = data.get("tier")
    if tier == "generation":
        pipeline = _field(data, "identity", "pipeline")
        app = isinstance(pipeline, str) and pipeline.startswith("app:")
        return "app" if app or _field(_field(data, "config", "tier"), "name") == "app" else "generation"
    return tier if isinstance(tier, str) and tier in _MOVED else None


def _field(data: Any, *path: str) -> Any:
    """data[path[0]][path[1]]..., or None where a level is missing or not an object (the schema then says why)."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data
