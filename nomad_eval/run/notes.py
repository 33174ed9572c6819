"""Notes the console shows once per project state rather than on every run: the same note about the same baseline
and questions says nothing new the second time. The report files keep every note; what was shown is remembered
by hash in `<paths.data_dir>/shown_notes.json`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nomad_eval.base.atomic import write_atomic

SHOWN = "shown_notes.json"


def shown_before(data_dir: Path, state: str, notes: list[str]) -> set[str]:
    """Those of `notes` already shown in `state` (a baseline, say); the others are recorded as shown now. A file
    that cannot be read or written shows every note."""
    path = data_dir / SHOWN
    try:
        seen = set(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        seen = set()
    keys = {n: hashlib.sha256(f"{state}\n{n}".encode()).hexdigest()[:16] for n in notes}
    before = {n for n, k in keys.items() if k in seen}
    if len(before) < len(notes):
        try:
            write_atomic(path, json.dumps(sorted(seen | set(keys.values()))))
        except OSError:
            return set()
    return before
