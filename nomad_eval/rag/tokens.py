"""Prompt-token estimates, calibrated per model from the backend's real prompt token counts."""

from __future__ import annotations

from dataclasses import dataclass

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
