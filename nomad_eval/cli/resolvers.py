"""OmegaConf resolvers the config files use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from omegaconf import OmegaConf

from nomad_eval.base.cpus import threads_per_job
from nomad_eval.base.paths import PACKAGE, REPO, project_dir, slug
from nomad_eval.base.secrets import known_secrets, redact_text
from nomad_eval.cli.project import register_project_search_path


def _launcher_jobs() -> int | None:
    """n_jobs of a parallel (joblib) launcher running this job; None outside Hydra or with a sequential one."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    launcher = HydraConfig.get().launcher
    if "joblib" not in str(launcher.get("_target_", "")):
        return None
    n = launcher.get("n_jobs")
    return int(n) if n is not None else None


def model_threads() -> int:
    """`${nomad_threads:}`: the cores available divided by the jobs running at once (see base/cpus.py)."""
    return threads_per_job(_launcher_jobs())


def project_file(rel: str) -> str | None:
    """`${nomad_project_file:glossary.yaml}`: the project's file, or null when it has none (an optional file)."""
    path = project_dir() / rel
    return str(path) if path.is_file() else None


def job_dirname(text: str, overrides: Any = None) -> str:
    """`${nomad_slug:${hydra.job.override_dirname},${hydra.overrides.task}}`: a sweep job's folder name, safe on
    disk, with credentials typed in the overrides (and any URL's user information) redacted."""
    typed = [str(o) for o in overrides or []]
    return slug(redact_text(str(text), known_secrets({}, {}, typed)))


def register_resolvers() -> None:
    register_project_search_path()
    resolvers: dict[str, Callable[..., Any]] = {
        "nomad_project": lambda rel="": str(project_dir() / rel), "nomad_project_file": project_file,
        "nomad_package": lambda rel="": str(PACKAGE / rel), "nomad_repo": lambda rel="": str(REPO / rel),
        "nomad_slug": job_dirname, "nomad_threads": model_threads,
        "nomad_or": lambda first, fallback: first if first else fallback,
    }
    for name, resolver in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
