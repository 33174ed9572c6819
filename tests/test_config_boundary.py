"""The composed config is read at the top only: below the tiers, code takes typed settings (harness/runtime.py,
judges/calibration.py), never a DictConfig."""

from __future__ import annotations

from nomad_eval.base.paths import PACKAGE

TOP = ("cli/", "tiers/")


def test_no_module_below_the_tiers_takes_a_dictconfig() -> None:
    found = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                   if "DictConfig" in p.read_text(encoding="utf-8")
                   and not p.relative_to(PACKAGE).as_posix().startswith(TOP))
    assert found == [], found
