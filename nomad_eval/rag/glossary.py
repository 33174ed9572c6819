"""Query expansion: spell out known acronyms beside themselves, so both forms can match."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from nomad_eval.base.kept import Kept


def load_glossary(path: Path) -> dict[str, str]:
    raw = path.read_bytes()
    # Parsed once per content: every job of a sweep builds its pipeline, and YAML parsing cost ~4 ms of each.
    return dict(_parsed.get((str(path), raw), lambda: _parse(path, raw)))


def _parse(path: Path, raw: bytes) -> dict[str, str]:
    data = yaml.safe_load(raw.decode("utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a glossary is a mapping of ACRONYM: spelled-out form")
    return {str(k): str(v) for k, v in data.items()}


_parsed: Kept[dict[str, str]] = Kept(8)


def expand(query: str, glossary: dict[str, str]) -> str:
    """Case-sensitive on the acronym, so the word 'co' in 'cook' or 'co-op' is not taken for CO."""
    out = query
    for acronym, spelled in glossary.items():
        if spelled.lower() in query.lower():
            continue
        out = re.sub(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", f"{acronym} ({spelled})", out)
    return out


@lru_cache(maxsize=65_536)
def expand_cached(query: str, glossary: tuple[tuple[str, str], ...]) -> str:
    """expand() remembered for the process: a run expands each question twice (to embed it in one batch, then to
    search), and every job of a sweep expands the same questions again."""
    return expand(query, dict(glossary))
