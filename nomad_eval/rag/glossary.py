"""Query expansion: spell out known acronyms beside themselves, so both forms can match."""

from __future__ import annotations

import re
from pathlib import Path

import yaml


def load_glossary(path: Path) -> dict[str, str]:
    data = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a glossary is a mapping of ACRONYM: spelled-out form")
    return {str(k): str(v) for k, v in data.items()}


def expand(query: str, glossary: dict[str, str]) -> str:
    """Case-sensitive on the acronym, so the word 'co' in 'cook' or 'co-op' is not taken for CO."""
    out, lowered = query, query.lower()
    for acronym, spelled in glossary.items():
        if acronym not in out or spelled.lower() in lowered:  # the pattern below can only match the acronym's text
            continue
        out = re.sub(rf"(?<![\w-]){re.escape(acronym)}(?![\w-])", f"{acronym} ({spelled})", out)
    return out
