"""What Hydra's composition is given: the OmegaConf resolvers the config files use, and the user's project on the
config search path, `<project>/conf` before the shipped configs.

Hydra's own `hydra.searchpath` appends after the primary config's folder, so a project's
`conf/experiment/ci.yaml` would lose to the shipped one of the same name; a SearchPathPlugin may put it first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from nomad_eval.base.cpus import threads_per_job
from nomad_eval.base.paths import CONF, PACKAGE, REPO, project_dir, slug
from nomad_eval.base.secrets import known_secrets, redact_text
from nomad_eval.harness.rundir import default_run_dir

PROVIDER = "nomad-eval project"


class ProjectConfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        conf = project_dir() / "conf"
        paths = search_path.get_path()
        # hydra.main passes the folder bare, initialize_config_dir as file://<folder>.
        ours = next((e.path for e in paths if e.path is not None and e.path.removeprefix("file://") == str(CONF)),
                    None)
        # Only for nomad-eval's own composition (not another Hydra app in the same environment), once.
        if ours is None or any(e.provider == PROVIDER for e in paths):
            return
        if conf.is_dir() and conf.resolve() != CONF:
            search_path.prepend(provider=PROVIDER, path=f"file://{conf}", anchor=SearchPathQuery(path=ours))


def register_project_search_path() -> None:
    """Registered in code rather than found under `hydra_plugins/`, so it needs no second top-level package."""
    Plugins.instance().register(ProjectConfSearchPath)


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
    }
    for name, resolver in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
    if not OmegaConf.has_resolver("nomad_run_dir"):  # makes the folder: resolved once per config
        OmegaConf.register_new_resolver("nomad_run_dir", default_run_dir, use_cache=True)
