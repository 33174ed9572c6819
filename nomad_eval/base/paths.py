"""Where the package's own files are, and names that are safe as folders and as unquoted Hydra values."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def slug(text: str, limit: int = 150) -> str:
    """A readable directory name that is safe on disk and as an unquoted Hydra override value.

    `model.name-a:b/c` -> `model.name-a_b_c`: no `=` or `,` survive, so `compare.run=multirun/<sweep>/<job>`
    can name a sweep job on the command line without quoting.

    Names stay within `limit` characters (well under the 255 bytes a folder name may have). A longer one is
    shortened item by item (items are `+`-separated, as in Hydra's override_dirname), each long item keeping its
    head (the key) and its tail (where the swept value is), with a hash of the whole item between them so two
    items that differ only in the middle stay apart. Cutting the name at the end instead would drop the swept
    keys that sort after a long absolute path and make the jobs of a sweep collide.
    """
    out = re.sub(r"[^A-Za-z0-9._+@-]+", "_", text).strip("_")
    if len(out) > limit:
        out = "+".join(_shorten(item) if len(item) > ITEM_KEEP else item for item in out.split("+"))
    if len(out) > limit:
        out = out[: limit - 9] + "@" + _digest(text)
    return out or "default"


ITEM_KEEP = 48  # an item longer than this is shortened when the whole name is too long


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _shorten(item: str) -> str:
    return f"{item[:16]}@{_digest(item)}@{item[-(ITEM_KEEP - 26):]}"
