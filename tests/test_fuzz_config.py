"""The config checker: fuzzed values either pass or are refused (exit 2) by key; no value slips through as
NaN, infinity or a bool read as a number, and every shipped configuration passes."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hypothesis import given
from hypothesis import strategies as st
from omegaconf import DictConfig, OmegaConf

from nomad_eval.base.errors import NomadError
from nomad_eval.base.paths import REPO
from nomad_eval.cli.config_check import SECTIONS, check_config
from tests.conftest import MINI
from tests.fuzz_support import fuzz_settings, run, tried

BOOL_KEYS = {"ablate", "verbose", "quiet", "cache", "resume", "pipeline.whole_document", "pipeline.glossary",
             "pipeline.rerank", "compare.after_run", "compare.strict", "stats.cluster",
             "browse.after_run"}


@pytest.mark.parametrize(("override", "named"), [
    ("pipeline.min_final_score=nan", "pipeline.min_final_score=nan: Input should be a finite number"),
    ("limit=true", "limit=True: Input should be a valid integer"),
    ("tier.ks=[0]", "tier.ks=[0]: 0 is not a cut-off"),
    ("tier.ks=[true]", "tier.ks.0=True: Input should be a valid integer"),
    ("threshold=inf", "threshold=inf: Input should be a finite number"),
    ("threshold=nan", "threshold=nan: Input should be a finite number"),
    ("pipeline.top_k=true", "pipeline.top_k=True: Input should be a valid integer"),
    ("pipeline.top_k=0", "pipeline.top_k=0: Input should be greater than or equal to 1"),
    ("pipeline.chunk_size=2.5", "pipeline.chunk_size=2.5: Input should be a valid integer"),
    ("pipeline.term_boost=-inf", "pipeline.term_boost=-inf: Input should be a finite number"),
    ("repeats=false", "repeats=False: Input should be a valid integer"),
    ("seed=-1", "seed=-1: Input should be greater than or equal to 0"),
    ("stats.resamples=0", "stats.resamples=0: Input should be greater than or equal to 1"),
    ("embedder.max_input_tokens=0", "embedder.max_input_tokens=0: Input should be greater than or equal to 1"),
    ("model.num_ctx=true", "model.num_ctx=True: Input should be a valid integer"),
    ("judge.model.num_ctx=0", "judge.model.num_ctx=0: Input should be greater than or equal to 1"),
    ("judging.min_agreement=nan", "judging.min_agreement=nan: Input should be a finite number"),
    ("plan.correlation=1", "plan.correlation=1: Input should be less than 1"),
    ("trace.otlp_timeout_s=0", "trace.otlp_timeout_s=0: Input should be greater than 0"),
    ("store.lock_timeout=nan", "store.lock_timeout=nan: Input should be a finite number"),
    ("gate.fail_under={rr:nan}", "gate.fail_under.rr=nan: Input should be a finite number"),
    ("quiet=3", "quiet=3: Input should be a valid boolean"),
    ("tier=generation tier.chunk_share=nan", "tier.chunk_share=nan: Input should be a finite number"),
])
def test_a_bad_value_is_refused_by_key(make_cfg: Callable[..., DictConfig], override: str, named: str) -> None:
    with pytest.raises(NomadError) as exc:
        check_config(make_cfg(*MINI, *override.split()))
    assert exc.value.exit_code == 2 and named in str(exc.value)


def test_an_interpolation_is_checked_as_the_value_it_resolves_to(make_cfg: Callable[..., DictConfig]) -> None:
    check_config(make_cfg(*MINI, "seed=${sample_repeats}"))
    with pytest.raises(NomadError, match=r"stats.resamples=0: Input should be greater than or equal to 1"):
        check_config(make_cfg(*MINI, "stats.resamples=${oc.decode:'0'}"))
    with pytest.raises(NomadError, match=r"pipeline.top_k='\$\{oc.env:NOMAD_UNSET_FOR_TEST\}': Input should be"):
        check_config(make_cfg(*MINI, "pipeline.top_k=${oc.env:NOMAD_UNSET_FOR_TEST}"))


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (REPO / "nomad_eval" / "conf" / group).glob("*.yaml"))


@pytest.mark.parametrize("override", [f"{g}={o}" for g in ("tier", "mode", "model", "embedder", "store", "pipeline",
                                                           "judge") for o in _options(g)]
                         + [f"+experiment={e}" for e in _options("experiment")] + ["data=beir data.path=/x"])
def test_every_shipped_option_passes(make_cfg: Callable[..., DictConfig], override: str) -> None:
    check_config(make_cfg(*MINI, *override.split()))


KEYS = sorted({f"{path}.{name}" if path else name for path, model in SECTIONS for name in model.model_fields}
              | {path for path, _ in SECTIONS if path} | {"tier.name"})
SCALAR = (st.none() | st.booleans() | st.integers(-3, 3) | st.integers() | st.floats()
          | st.floats(-1, 1) | st.text(max_size=6) | st.sampled_from(["???", "${seed}", "\ud800"]))
VALUE = st.recursive(SCALAR, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                     max_leaves=6)


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    node = tree
    *parents, leaf = key.split(".")
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[leaf] = value


@pytest.mark.slow
def test_fuzzed_config_values_pass_or_are_refused_by_key() -> None:
    with initialize_config_dir(config_dir=str(REPO / "nomad_eval" / "conf"), version_base="1.3"):
        base: Any = OmegaConf.to_container(compose("config", overrides=["quiet=true"]), resolve=False)

    @fuzz_settings(150)  # each example builds a whole config (~40 ms)
    @given(st.dictionaries(st.sampled_from(KEYS) | st.just("gate.fail_under.recall@5"), VALUE, min_size=1,
                           max_size=3))
    def prop(values: dict[str, Any]) -> None:
        tried("config checker")
        tree = copy.deepcopy(base)
        for key, value in values.items():
            _set(tree, key, value)
        try:
            check_config(OmegaConf.create(tree))
        except NomadError as exc:
            assert exc.exit_code == 2
            problems = str(exc).split("\n  ")[1:]
            # Each problem names a key that was changed (or one a changed key is checked against).
            named = set(values) | {k.rsplit(".", 1)[0] for k in values} | {"tier.ks", "pipeline.chunk_overlap"}
            assert problems and all(any(k in p for k in named) for p in problems), (values, str(exc))
            return
        # Passed: no checked key holds NaN or infinity, nor a bool unless it is a switch.
        for key, value in values.items():
            if key == "tier.name":  # not a number; it only decides whether the ks rule applies
                continue
            assert not (isinstance(value, float) and not math.isfinite(value)), (key, value)
            assert not isinstance(value, bool) or key in BOOL_KEYS, (key, value)

    assert run("config checker", prop) >= 150
