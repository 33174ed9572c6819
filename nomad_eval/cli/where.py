"""Is the working directory a nomad-eval project, and can it be written? Asked before Hydra runs, since Hydra makes
the run folder (and a tier its store) before anything could say that the corpus or the suite is missing, or fail
making it in a read-only checkout or mount."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import tempfile
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


_CHOSEN = ("hydra.run.dir=", "paths.run_dir=", "hydra.output_subdir=")


def run_folder_elsewhere(argv: list[str], cwd: Path) -> list[str]:
    """The overrides that put the run's folder in a fresh temporary folder when `cwd` cannot be written (Hydra would
    fail making it before any tier runs, so even a check ended in a traceback): checks and status write nothing,
    and the folder is removed at exit when nothing was written there; a tier that does write names it on its last
    line, as always. None when `cwd` can be written, when the command names its own folder, or for a sweep (its
    folder is named with hydra.sweep.dir)."""
    if os.access(cwd, os.W_OK) or any(a.lstrip("+").startswith(_CHOSEN) for a in argv) \
            or {"-m", "--multirun"} & set(argv):
        return []
    folder = Path(tempfile.mkdtemp(prefix="nomad-eval-run-"))
    atexit.register(_remove_if_empty, folder)
    # No .hydra/ copy there (the job log is made only by a first line logged): a check's folder stays empty.
    return [f"hydra.run.dir={folder}", "hydra.output_subdir=null"]


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
