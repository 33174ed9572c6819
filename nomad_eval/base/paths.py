"""Where the package's own files are, where the user's project is, and names that are safe as folders and as
unquoted Hydra values."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
# The default configs (and rubrics) ship inside the package, so an installed wheel has them.
CONF = PACKAGE / "conf"
# The folder above the package: the checkout when running from one, site-packages when installed.
REPO = PACKAGE.parent
# Only a checkout's git state says which code ran; an installed package's parent may sit in someone else's repo.
CHECKOUT: Path | None = REPO if (REPO / "pyproject.toml").is_file() and (REPO / "nomad_eval").is_dir() else None
PROJECT_ENV = "NOMAD_EVAL_PROJECT"


def project_dir() -> Path:
    """The user's project: $NOMAD_EVAL_PROJECT, else the working directory. Its corpus/, goldens/, baselines/,
    calibration/, glossary.yaml and conf/ are the defaults, and every output goes under it."""
    env = os.environ.get(PROJECT_ENV)
    return Path(env).expanduser().resolve() if env else Path.cwd().resolve()


def slug(text: str, limit: int = 150) -> str:
    """A readable directory name that is safe on disk and as an unquoted Hydra override value.

    `model.name-a:b/c` -> `model.name-a_b_c`: no `=` or `,` survive, so `compare.run=multirun/<sweep>/<job>`
    can name a sweep job on the command line without quoting.

    Names stay within `limit` characters (well under the 255 bytes a folder name may have). A longer one is
    shortened item by item, longest first (items are `+`-separated `key-value` pairs, as in Hydra's
    override_dirname): an item keeps its key and the tail of its value (where a path's distinguishing part is),
    with a hash of the whole item between them, so two items that differ only in the middle stay apart. Cutting
    the name at the end instead would drop the swept keys that sort after a long absolute path and make the jobs
    of a sweep collide.
    """
    out = re.sub(r"[^A-Za-z0-9._+@-]+", "_", text).strip("_")
    items = out.split("+")
    for i in sorted(range(len(items)), key=lambda i: -len(items[i])):
        if len("+".join(items)) <= limit:
            break
        short = _shorten(items[i])
        if len(short) < len(items[i]):
            items[i] = short
    out = "+".join(items)
    if len(out) > limit:
        out = out[: limit - 9] + "@" + _digest(text)
    return out or "default"


VALUE_TAIL = 16  # characters of a shortened item's value that stay readable


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _shorten(item: str) -> str:
    key, sep, value = item.partition("-")
    if not sep or len(key) > 40:
        key, value = item[:16], item[16:]
    return f"{key}{sep}@{_digest(item)}@{value[-VALUE_TAIL:]}"
