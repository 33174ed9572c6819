"""Where the package's own files are, and names that are safe as folders and as unquoted Hydra values."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def slug(text: str) -> str:
    """A readable directory name that is safe on disk and as an unquoted Hydra override value.

    `model.name-a:b/c` -> `model.name-a_b_c`: no `=` or `,` survive, so `compare.run=multirun/<sweep>/<job>`
    can name a sweep job on the command line without quoting.
    """
    out = re.sub(r"[^A-Za-z0-9._+@-]+", "_", text).strip("_")
    return out[:150] or "default"
