"""Prompt-token estimates, calibrated per model from the backend's real prompt token counts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nomad_eval.base.atomic import write_atomic

PER_MESSAGE = 4  # role markers and separators a chat template adds around each message


@dataclass(frozen=True)
class TokenEstimator:
    chars_per_token: float = 4.0

    def text(self, s: str) -> int:
        return int(len(s) / self.chars_per_token) + 1

    def messages(self, msgs: list[dict[str, str]]) -> int:
        return sum(self.text(m["content"]) + PER_MESSAGE for m in msgs) + 2


def calibrate(samples: list[tuple[list[dict[str, str]], int]]) -> TokenEstimator:
    """Fit chars-per-token on (messages, real prompt tokens) pairs, net of the template overhead."""
    chars = sum(sum(len(m["content"]) for m in msgs) for msgs, _ in samples)
    tokens = sum(real - PER_MESSAGE * len(msgs) - 2 for msgs, real in samples)
    if chars <= 0 or tokens <= 0:
        return TokenEstimator()
    return TokenEstimator(chars / tokens)


def load_calibration(path: Path, model_key: str) -> TokenEstimator | None:
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    ratio = data.get(model_key)
    return TokenEstimator(float(ratio)) if ratio else None


def save_calibration(path: Path, model_key: str, est: TokenEstimator) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    data[model_key] = est.chars_per_token
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True))
