"""Reported metric names, `[<mode>.]<family>[@<k>]`, are parsed in one place: registry.MetricName."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import nomad_eval
from nomad_eval.cli.config_check import gate_name_problem
from nomad_eval.metrics.registry import REGISTRY, MetricName, spec_for

PACKAGE = Path(nomad_eval.__file__).parent


@pytest.mark.parametrize(("name", "mode", "family", "k"), [
    ("recall@5", None, "recall", 5),
    ("e2e.correctness", "e2e", "correctness", None),
    ("e2e.recall@5", "e2e", "recall", 5),
    ("nonEmptyRateOnRefusal", None, "nonEmptyRateOnRefusal", None),
    ("ndcg@100", None, "ndcg", 100),
    ("judge.faithfulness", "judge", "faithfulness", None),
    ("judge.e2e.faithfulness", "judge.e2e", "faithfulness", None),  # the mode is all before the last dot
    ("oracle.my-rubric", "oracle", "my-rubric", None),
])
def test_a_name_parses_into_its_parts_and_prints_back_unchanged(name: str, mode: str | None, family: str,
                                                                k: int | None) -> None:
    parsed = MetricName.parse(name)
    assert (parsed.mode, parsed.family, parsed.k) == (mode, family, k)
    assert str(parsed) == name
    assert parsed.bare == name.rpartition(".")[2]


def test_every_name_the_registry_reports_round_trips_to_its_spec() -> None:
    for spec in REGISTRY.values():
        for mode in (None, "oracle", "e2e", "noretrieval"):
            for k in (1, 5, 10) if spec.parametrized else (None,):
                name = spec.name(k) if mode is None else f"{mode}.{spec.name(k)}"
                assert MetricName.parse(name) == MetricName(mode, spec.family, k)
                assert str(MetricName.parse(name)) == name
                assert spec_for(name) is spec
                assert MetricName.parse(name).k == k


@pytest.mark.parametrize("name", ["", "recall@", "recall@x", "recall@0", "recall@05", "recall@-1", "recall@+5",
                                  "recall@ 5", "recall@5@6", "@5", ".recall", "recall.", "e2e..recall@5",
                                  "re call", "recall@5.0"])
def test_a_bad_name_is_refused_naming_it(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{name!r} is not a metric name")):
        MetricName.parse(name)
    assert MetricName.try_parse(name) is None
    assert spec_for(name) is None


def test_text_that_is_no_metric_has_no_spec() -> None:
    assert spec_for("pipeline.top_k") is None  # a sweep parameter: parses, but top_k is no family
    assert spec_for("+data/corpus") is None
    assert MetricName.try_parse("pipeline.top_k") == MetricName("pipeline", "top_k")


def test_the_gate_names_a_malformed_cut_off_and_keeps_its_other_messages() -> None:
    assert gate_name_problem("recall@x") == ("gate.fail_under: 'recall@x' is not a metric name: the cut-off after @ "
                                             "must be a whole number from 1 (no sign, no leading zero), not 'x'")
    assert (gate_name_problem("e2e.recal@5") or "").startswith(
        "gate.fail_under names 'e2e.recal@5': no such metric; did you mean 'e2e.recall@5'? (known: ")
    assert gate_name_problem("hit") == "gate.fail_under names 'hit': hit needs a cut-off, e.g. hit@5"
    assert gate_name_problem("rr@5") == "gate.fail_under names 'rr@5': rr takes no @k"
    assert gate_name_problem("x.correctness") == ("gate.fail_under names 'x.correctness': 'x' is not a mode "
                                                  "(oracle, e2e, noretrieval, app)")
    assert gate_name_problem("e2e.recall@5") is None


# Splitting on "@" that is not a metric name: Hydra's `group@package` in a defaults entry and in an override key,
# and upstream NOMAD's own metric names (their cut-off text passes through to ours unparsed).
# Hydra's `group@package` override keys, and upstream's own field names: not metric names.
NOT_METRIC_NAMES = {"cli/suggest.py": 4, "base/secrets.py": 2, "report/upstream.py": 1}
SPLIT_AT = re.compile(r"""\.r?(?:split|partition)\(\s*["']@["']""")


def test_no_module_but_the_registry_splits_a_metric_name_by_hand() -> None:
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != "metrics/registry.py" and (n := len(SPLIT_AT.findall(path.read_text(encoding="utf-8")))):
            found[rel] = n
    assert found == NOT_METRIC_NAMES, "parse metric names with metrics.registry.MetricName"
