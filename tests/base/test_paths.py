"""Job folder names keep the swept value whatever the length of the other overrides."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nomad_eval.base.paths import slug

LONG = "data.corpus_dir-" + "_".join(["tmp", "pytest-of-someone-with-a-long-name"] * 6) + "_corpus"


def test_short_names_are_unchanged_apart_from_unsafe_characters() -> None:
    assert slug("model.name-a:b/c") == "model.name-a_b_c"
    assert slug("") == "default"


def test_a_long_path_item_keeps_the_swept_value_and_jobs_stay_apart() -> None:
    names = [slug(f"{LONG}+paths.data_dir-x+threshold-{t}") for t in ("0", "0.25", "0.5")]
    assert all(len(n) <= 150 for n in names)
    assert [n.endswith(f"threshold-{t}") for n, t in zip(names, ("0", "0.25", "0.5"), strict=True)] == [True] * 3
    assert len(set(names)) == 3
    assert all(n.startswith("data.corpus_dir-") for n in names)  # the key is still readable


def test_items_differing_only_in_the_middle_stay_apart() -> None:
    a = slug(LONG.replace("someone", "someone-a") + "+k-1")
    b = slug(LONG.replace("someone", "someone-b") + "+k-1")
    assert a != b and len(a) <= 150 and len(b) <= 150


@given(st.lists(st.text(min_size=0, max_size=120), min_size=1, max_size=8))
def test_any_override_list_gives_a_safe_bounded_name(items: list[str]) -> None:
    name = slug("+".join(items))
    assert 0 < len(name) <= 150
    assert "=" not in name and "," not in name and "/" not in name


def test_a_shortened_name_still_parses_as_an_unquoted_override_value() -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    name = slug(f"{LONG}+threshold-0.5")
    parsed = OverridesParser.create().parse_overrides([f"compare.run=multirun/2026-12-01/0_{name}"])[0]
    assert parsed.value() == f"multirun/2026-12-01/0_{name}"
