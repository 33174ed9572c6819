"""A project folder that cannot be written (a read-only checkout or mount): Hydra would fail making
outputs/<date>/<time>_<tier>/ before any tier runs, so even a check ended in a traceback. Checks and status write
nothing, so the run's folder is put in a fresh temporary folder instead, removed at exit when nothing was written
there; a tier that does write names that folder on its last line, as always."""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
from pathlib import Path

_CHOSEN = ("hydra.run.dir=", "paths.run_dir=", "hydra.output_subdir=")


def run_folder_elsewhere(argv: list[str], cwd: Path) -> list[str]:
    """The overrides that move Hydra's run folder out of an unwritable `cwd`; none when it can be written, when
    the command names its own folder, or for a sweep (its folder is named with hydra.sweep.dir)."""
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
