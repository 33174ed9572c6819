"""A shipped option read as plain YAML: built with the values the composed config gives it, and an interpolation
only a composed config can resolve named by file, line and value."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from omegaconf import DictConfig

from nomad_eval.base.errors import InvalidInput
from nomad_eval.base.paths import CONF
from nomad_eval.base.shipped import build, option


def test_a_built_option_takes_the_composed_configs_values(make_cfg: Callable[..., DictConfig]) -> None:
    composed = make_cfg("model=smollm2").model
    built = build("model", "smollm2")
    assert (built.name, built.threads) == (composed.name, composed.threads)  # `${nomad_threads:}`: every core
    assert build("model", "smollm2", threads=1).threads == 1


def test_an_option_is_read_as_written() -> None:
    assert option("store", "edge")["path"] == "${paths.data_dir}/qdrant-edge"
    assert option("pipeline", "default")["chunk_size"] == 800


def test_an_interpolation_only_a_composed_config_resolves_names_file_line_and_value() -> None:
    with pytest.raises(InvalidInput) as caught:
        build("store", "edge")  # its path is `${paths.data_dir}/qdrant-edge`, and no `paths` here
    message = str(caught.value)
    assert f"{CONF / 'store' / 'edge.yaml'}:2:" in message and "'${paths.data_dir}/qdrant-edge'" in message
