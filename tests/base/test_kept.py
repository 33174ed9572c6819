from __future__ import annotations

from nomad_eval.base.kept import Kept


def test_a_value_is_made_once_per_key_and_the_oldest_goes_first() -> None:
    made: list[str] = []

    def make(key: str) -> str:
        made.append(key)
        return key.upper()

    kept: Kept[str] = Kept(2)
    assert kept.get("a", lambda: make("a")) == "A"
    assert kept.get("a", lambda: make("a")) == "A"
    assert made == ["a"]
    kept.get("b", lambda: make("b"))
    kept.get("c", lambda: make("c"))  # past the bound: "a" goes
    assert len(kept) == 2
    kept.get("a", lambda: make("a"))
    assert made == ["a", "b", "c", "a"]


def test_a_failure_is_not_kept() -> None:
    kept: Kept[int] = Kept(4)
    calls = 0

    def fail() -> int:
        nonlocal calls
        calls += 1
        raise ValueError("no")

    for _ in range(2):
        try:
            kept.get("k", fail)
        except ValueError:
            pass
    assert calls == 2 and len(kept) == 0
