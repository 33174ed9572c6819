"""The user's project on Hydra's config search path: `<project>/conf` comes before the shipped configs.

Hydra's own `hydra.searchpath` appends after the primary config's folder, so a project's
`conf/experiment/ci.yaml` would lose to the shipped one of the same name; a SearchPathPlugin may put it first.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.core.plugins import Plugins
from hydra.plugins.search_path_plugin import SearchPathPlugin

from nomad_eval.base.paths import CONF, project_dir

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
