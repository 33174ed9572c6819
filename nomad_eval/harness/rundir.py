"""Where this run writes, and what Hydra knows about it (overrides, the sweep it belongs to)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from nomad_eval.base.locking import run_folder_lock
from nomad_eval.base.runfolder import settle


def _hydra() -> object | None:
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get() if HydraConfig.initialized() else None


def run_dir(explicit: str | None) -> Path:
    """`paths.run_dir` when set, else the folder Hydra made for this job; created."""
    hc = _hydra()
    if explicit:
        path = Path(explicit)
    elif hc is not None:
        path = Path(hc.runtime.output_dir)  # type: ignore[attr-defined]
    else:
        raise ValueError("no Hydra context: set paths.run_dir")
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_run_dir(explicit: str | None, tier: str, mode: object = None) -> str:
    """`hydra.run.dir`: `paths.run_dir` when set, else `outputs/<date>/<HH-MM-SS.mmm>_<tier>`, made here: created
    exclusively, with `_2`, `_3`, ... on a collision, so two runs started at once get a folder each. Registered with
    OmegaConf's cache (cli/resolvers.py), so Hydra reading the setting again gets the same folder. In a sweep
    (`mode` MULTIRUN: Hydra reads the setting though its jobs write under hydra.sweep.dir) nothing is made."""
    if explicit:
        return explicit
    now = datetime.now()
    base = Path("outputs") / now.strftime("%Y-%m-%d") / f"{now:%H-%M-%S}.{now.microsecond // 1000:03d}_{tier}"
    if "MULTIRUN" in str(mode):
        return str(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        path = base if n == 1 else base.with_name(f"{base.name}_{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return str(path)
    raise AssertionError("unreachable")


@contextmanager
def owned(explicit: str | None, timeout: float, quiet: bool) -> Iterator[Path | None]:
    """The run's folder, locked for the block (None outside Hydra with no `paths.run_dir`: a tier called directly);
    a mark listing nothing is dropped at the end."""
    try:
        out = run_dir(explicit)
    except ValueError:
        yield None
        return
    with run_folder_lock(out, timeout, quiet):
        try:
            yield out
        finally:
            settle(out)


def multirun() -> bool:
    """Whether this job is one of a sweep's (`-m`)."""
    hc = _hydra()
    return hc is not None and str(hc.mode) == "RunMode.MULTIRUN"  # type: ignore[attr-defined]


def sweep_id() -> str | None:
    hc = _hydra()
    if hc is None or not multirun():
        return None
    f = Path(hc.sweep.dir) / "sweep.json"  # type: ignore[attr-defined]
    return json.loads(f.read_text())["sweep_id"] if f.exists() else None
