"""Cluster launchers, run for real: a sweep under Submitit's local executor (each job its own process, the summary
built by the launching process) measures exactly what the basic in-process launcher measures, and the
cluster recipe of docs/configuration.md is the command run here, with only its host names changed."""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from omegaconf import DictConfig
from polars.testing import assert_frame_equal

from nomad_eval.base.paths import REPO
from tests.conftest import MINI, run_cli

pytestmark = pytest.mark.slow  # sweeps under submitit, each job its own process

SWEEP = ("tier=retrieval", "threshold=0.3,0.5")
# The documented recipe's hosts; the test puts a temporary folder in their place. No Qdrant server runs here, so
# qdrant-client's local mode (store.url a folder) stands in for the one server a cluster's jobs share.
QDRANT_HOST = "http://qdrant.cluster:6333"
SHARED = "/shared"


def _sweep(sweep: Path, data_dir: Path, *extra: str) -> pl.DataFrame:
    r = run_cli(*SWEEP, *MINI, f"paths.data_dir={data_dir}", "quiet=true", f"hydra.sweep.dir={sweep}", *extra, "-m")
    assert r.returncode == 0, r.stdout + r.stderr
    return pl.read_parquet(sweep / "summary.parquet")


def _measured(df: pl.DataFrame) -> pl.DataFrame:
    """What a job measured: its status, the swept value, and every metric with its interval (`.low`, `.high`, `.n`),
    in job order; not the job's folder name or paths, which name where it ran rather than what it found."""
    metrics = [c for c in df.columns if f"{c}.n" in df.columns]
    cols = ["status", "error", "threshold"] + [f"{m}{s}" for m in metrics for s in ("", ".low", ".high", ".n")]
    return df.with_columns(pl.col("job").str.extract(r"^(\d+)_").cast(pl.Int64).alias("num")).sort("num").select(cols)


def _ran_under_submitit(sweep: Path) -> None:
    """Each job went through submitit: its own pickled submission, result and log in <sweep>/.submitit."""
    results = sorted(sweep.glob(".submitit/*/*_result.pkl"))
    assert len(results) == 2, results
    logs = [p.read_text() for p in sweep.glob(".submitit/*/*_log.out")]
    assert len(logs) == 2 and all("Job completed successfully" in log for log in logs)


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory, shared_data_dir: Path) -> tuple[pl.DataFrame, Path]:
    """The reference: the same sweep under Hydra's basic launcher (jobs one after another, in one process), and the
    embedding cache it leaves, so the jobs under test do not each load MiniLM."""
    root = tmp_path_factory.mktemp("basic")
    (root / "data").mkdir()
    if (cache := shared_data_dir / "embeddings.sqlite").exists():
        shutil.copy(cache, root / "data" / "embeddings.sqlite")
    df = _sweep(root / "sweep", root / "data")
    assert df.height == 2 and df["status"].to_list() == ["ok", "ok"]
    assert df["recall@5.n"].to_list() == [7, 7] and df["recall@5"].null_count() == 0
    assert df["recall@5"][0] != df["recall@5"][1]  # the two thresholds measure differently: equality means something
    return df, root / "data" / "embeddings.sqlite"


def test_submitit_local_sweep_equals_the_basic_launcher(tmp_path: Path, data_dir: Path,
                                                        basic: tuple[pl.DataFrame, Path]) -> None:
    basic_summary, cache = basic
    shutil.copy(cache, data_dir / "embeddings.sqlite")
    # Both jobs start at once on a store nobody has written yet (only the embedding cache is warm): the data dir's
    # lock makes them take turns.
    sweep = tmp_path / "sweep"
    got = _sweep(sweep, data_dir, "hydra/launcher=submitit_local")
    _ran_under_submitit(sweep)
    assert got["job"].to_list() == basic_summary["job"].to_list()
    assert_frame_equal(_measured(got), _measured(basic_summary))
    assert (sweep / "ranking.json").exists() and (sweep / "report.html").exists()  # the callback's other outputs


def _recipe() -> list[str]:
    """The cluster command of docs/configuration.md, continuation lines joined."""
    text = (REPO / "docs" / "configuration.md").read_text()
    found = re.search(r"```bash\n(python -m nomad_eval hydra/launcher=submitit_local[^`]*?)```", text)
    assert found, "docs/configuration.md lacks the submitit_local cluster recipe"
    return shlex.split(found.group(1).replace("\\\n", " "))


def test_the_readme_cluster_recipe_shares_one_server_store(tmp_path: Path,
                                                          make_cfg: Callable[..., DictConfig],
                                                          basic: tuple[pl.DataFrame, Path]) -> None:
    from qdrant_client import QdrantClient, models

    from tests.typed_config import runtime

    args = _recipe()
    assert args[:3] == ["python", "-m", "nomad_eval"] and args[-1] == "-m"
    assert {*SWEEP, "hydra/launcher=submitit_local", "store=server", f"store.url={QDRANT_HOST}"} <= set(args)
    qdrant = tmp_path / "qdrant"
    local = [a.replace(QDRANT_HOST, str(qdrant)).replace(SHARED, str(tmp_path / "shared")) for a in args[3:]]
    assert all(f"={SHARED}/" not in a and "qdrant.cluster" not in a for a in local)
    basic_summary, cache = basic
    shared_data = Path(next(a for a in local if a.startswith("paths.data_dir=")).partition("=")[2])
    shared_data.mkdir(parents=True)
    shutil.copy(cache, shared_data / "embeddings.sqlite")
    # The fixture corpus instead of the default one (seconds, not minutes), before the closing `-m`.
    r = run_cli(*local[:-1], *MINI, "quiet=true", local[-1])
    assert r.returncode == 0, r.stdout + r.stderr
    sweeps = [p.parent for p in (tmp_path / "shared").rglob("summary.parquet")]
    assert len(sweeps) == 1, sweeps
    _ran_under_submitit(sweeps[0])
    got = pl.read_parquet(sweeps[0] / "summary.parquet")
    assert got["store"].to_list() == ["server", "server"]
    # The server store measures what the embedded one does: same ranking, metrics, intervals.
    assert_frame_equal(_measured(got), _measured(basic_summary))

    # Both jobs used one collection, written once: as many tagged points as the corpus has chunks, no duplicates.
    rt = runtime(make_cfg(*MINI))
    client = QdrantClient(path=str(qdrant))
    try:
        flt = models.Filter(must=[models.FieldCondition(key="fingerprint",
                                                        match=models.MatchValue(value=rt.fingerprint))])
        assert client.count("nomad", count_filter=flt, exact=True).count == len(rt.chunks) > 0
    finally:
        client.close()
