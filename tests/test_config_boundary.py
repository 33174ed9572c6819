"""The composed config is read at the top only: cli/ turns it into the typed RunConfig (nomad_eval/config/), tiers
read that, and the layers below take plain values or typed settings (harness/runtime.py, judges/calibration.py,
gate/settings.py), never a DictConfig, never omegaconf, never a config typed Any."""

from __future__ import annotations

import re

from nomad_eval.base.paths import PACKAGE

ENTRY = ("cli/", "__main__.py")
OMEGACONF = re.compile(r"^\s*(from|import) omegaconf\b", re.M)
CFG_READ = re.compile(r"\bcfg(\.|\[|\.get\()")
ANY_CONFIG = re.compile(r"\b(cfg|config): Any\b")


def _offenders(pattern: re.Pattern[str]) -> set[str]:
    found = set()
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE).as_posix()
        if not rel.startswith(ENTRY) and pattern.search(p.read_text(encoding="utf-8")):
            found.add(rel)
    return found


def test_no_module_outside_the_entry_takes_a_dictconfig() -> None:
    assert _offenders(re.compile(r"\bDictConfig\b")) == set()


def test_only_the_entry_imports_omegaconf_reads_cfg_or_takes_a_config_typed_any() -> None:
    # A shipped option read as a file (base/shipped.py) is plain YAML too: only the entry resolves with OmegaConf.
    offenders = _offenders(OMEGACONF) | _offenders(CFG_READ) | _offenders(ANY_CONFIG)
    assert offenders == set(), sorted(offenders)


def test_the_typed_config_needs_no_omegaconf() -> None:
    assert not any(OMEGACONF.search(p.read_text(encoding="utf-8")) for p in (PACKAGE / "config").rglob("*.py"))
