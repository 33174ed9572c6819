"""Is the working directory a nomad-eval project? Asked before Hydra runs, since Hydra makes the run folder (and a
tier its store) before anything could say that the corpus or the suite is missing."""

from __future__ import annotations

import sys
from pathlib import Path

# Any one of these makes a folder a project: `init` writes all of them, a hand-made project has at least one.
MARKERS = ("corpus", "goldens", "conf", "baselines")
NOT_A_PROJECT = "not a nomad-eval project here: cd into one, or run nomad-eval init <dir>"
# Hydra's flags that only print (help, config, completion): they write nothing, so they work anywhere.
_PRINT_ONLY = ("-h", "--help", "--hydra-help", "-c", "--cfg", "-i", "--info", "-sc", "--shell-completion",
               "-p", "--package", "--resolve")


def is_project(folder: Path) -> bool:
    return any((folder / name).is_dir() for name in MARKERS)


def _points_elsewhere(override: str) -> bool:
    """An override that names where the data or the runs are (`data.corpus_dir=...`, `data=beir`,
    `compare.run=...`): the command does not depend on the working directory being a project."""
    key = override.split("=", 1)[0].lstrip("+~")
    return key == "data" or key.endswith(("_dir", ".run", ".runs", ".annotate"))


def outside_project(argv: list[str], folder: Path) -> str | None:
    """The message for a command that needs a project but was started outside one; None when it may go on."""
    if is_project(folder) or any(a in _PRINT_ONLY for a in argv) or any(map(_points_elsewhere, argv)):
        return None
    return f"{NOT_A_PROJECT} ({folder} has none of {', '.join(m + '/' for m in MARKERS)})"


def make_project_importable(project: Path) -> None:
    """The project folder on the import path, after the installed packages: a `myretriever.py` beside conf/ is
    found from the `nomad-eval` script too, and a project file never shadows one of the tool's dependencies."""
    if str(project) not in sys.path:
        sys.path.append(str(project))
