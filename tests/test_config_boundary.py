"""The composed config is read at the top only: cli/ turns it into the typed RunConfig (nomad_eval/config/), tiers
read that, and the layers below take plain values or typed settings (harness/runtime.py, judges/calibration.py,
gate/settings.py), never a DictConfig, never omegaconf, never a config typed Any."""

from __future__ import annotations

import re

from nomad_eval.base.paths import PACKAGE

TOP = ("cli/", "tiers/", "run/")  # run/: the tiers' shared code, converted with them
ENTRY = ("cli/", "__main__.py")
OMEGACONF = re.compile(r"^\s*(from|import) omegaconf\b", re.M)
CFG_READ = re.compile(r"\bcfg(\.|\[|\.get\()")
ANY_CONFIG = re.compile(r"\b(cfg|config): Any\b")
# Modules still on the composed config, each converted in its turn (issue 40); an entry that no longer offends must
# leave this list, so it only shrinks.
PENDING = {
    "base/shipped.py", "harness/rundir.py", "report/intervals.py", "report/sweep_rank.py", "report/upstream_view.py",
    "run/answering.py", "run/attribute.py", "run/finish.py", "run/folder.py", "run/generation_auto.py",
    "run/generation_cases.py", "run/judging.py", "run/queries.py", "run/retrieval_cases.py", "run/review.py",
    "run/runs_page.py", "run/settings.py", "run/app_outputs.py",
    "tiers/app.py", "tiers/browse.py", "tiers/calibrate.py", "tiers/compare.py", "tiers/corpus.py", "tiers/dataset.py",
    "tiers/generation.py", "tiers/judge_labels.py", "tiers/matrix.py", "tiers/plan.py", "tiers/position_curve.py",
    "tiers/promote.py", "tiers/retrieval.py", "tiers/synthesize.py",
}


def _offenders(pattern: re.Pattern[str]) -> set[str]:
    found = set()
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE).as_posix()
        if not rel.startswith(ENTRY) and pattern.search(p.read_text(encoding="utf-8")):
            found.add(rel)
    return found


def test_no_module_below_the_tiers_takes_a_dictconfig() -> None:
    found = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                   if "DictConfig" in p.read_text(encoding="utf-8")
                   and not p.relative_to(PACKAGE).as_posix().startswith(TOP))
    assert found == [], found


def test_only_the_entry_imports_omegaconf_reads_cfg_or_takes_a_config_typed_any() -> None:
    offenders = _offenders(OMEGACONF) | _offenders(CFG_READ) | _offenders(ANY_CONFIG)
    assert offenders - PENDING == set(), sorted(offenders - PENDING)
    assert PENDING - offenders == set(), f"converted: drop {sorted(PENDING - offenders)} from PENDING"


def test_the_typed_config_needs_no_omegaconf() -> None:
    assert not any(OMEGACONF.search(p.read_text(encoding="utf-8")) for p in (PACKAGE / "config").rglob("*.py"))
