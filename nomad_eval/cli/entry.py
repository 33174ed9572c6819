"""Runs one composed config: picks the tier, turns errors into messages and exit codes."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from rich.markup import escape

from nomad_eval.base import runfolder as rf
from nomad_eval.base.atomic import FULL, no_space, write_atomic
from nomad_eval.base.console import console, err_console
from nomad_eval.base.errors import NomadError
from nomad_eval.base.json_fields import fields
from nomad_eval.base.safe_names import require_safe
from nomad_eval.base.secrets import redact
from nomad_eval.cli.suggest import key_paths
from nomad_eval.harness.rundir import multirun, owned, run_dir, sweep_id

# The tiers, their data, models and report models load when a job runs, not at import: `--help` and a corpus check
# stay quick (tests/test_startup.py).


def _record_failure(cfg: DictConfig, message: str) -> None:
    """A failed job still leaves a report, so a sweep's summary shows it instead of hiding it; but a good report
    from an earlier run in the same directory is never replaced by it (the failure goes beside it)."""
    if cfg.tier.name in ("compare", "promote", "corpus"):
        return
    from nomad_eval.report.schema import Report

    try:
        out = run_dir(cfg.paths.run_dir)
        unresolved = OmegaConf.to_container(cfg, resolve=False)
    except Exception:  # the failure may be in the config itself; then there is nothing safe to write
        return
    # Unresolved, since resolving may be what failed: environment values stay `${oc.env:...}`, and credentials
    # written literally in the config are redacted.
    config = redact(unresolved, unresolved)
    from nomad_eval.cli.config_check import command_line

    report = Report(tier=str(cfg.tier.name), status="failed", error=message, overrides=command_line(),
                    sweep_id=sweep_id(), config=config)
    target = out / "report.json"
    earlier = _finished(target)
    intact = earlier and not rf.written(out) and (not (out / rf.MANIFEST).exists() or rf.sealed_intact(out))
    if intact:
        target = out / rf.FAILURE
    elif earlier:
        # This run replaced part of an earlier one: what is left of that run no longer stands for anything (and
        # on a full disk, removing it first leaves room for the record). Until the failed run is sealed, the
        # folder's mark has every reader refuse it.
        remains = rf.prune(out)
        err_console.print(f"this run had replaced part of the earlier run in {out}; that run's remaining files "
                          f"were removed ({', '.join(remains) or 'none'})", markup=False)
    try:
        write_atomic(target, report.model_dump_json(indent=2))
        if not intact:
            rf.seal(out)  # the folder holds this failed run alone, as its report says
    except (NomadError, OSError) as exc:
        err_console.print(f"the failure could not be recorded in {target}: {exc}", markup=False, highlight=False)
        return
    err_console.print(f"the failure is recorded in {target}" + (
        f"; {out / 'report.json'} still holds the earlier finished run" if intact else ""), markup=False)


def _finished(path: Path) -> bool:
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(old, dict) and old.get("status") == "ok"


def _stale(cfg: DictConfig, old: Mapping[str, object]) -> str | None:
    """Why an earlier finished report does not stand for this config, or None when it does: same corpus
    fingerprint, goldens hash, code version (commit and dirty flag) and config."""
    if old.get("status") != "ok":
        return f"the earlier run did not finish (status {old.get('status')})"
    # Imported here: --help and tiers without resume should not pay for the data and backend modules.
    from nomad_eval.cli.config_check import typed
    from nomad_eval.config.settings import runtime
    from nomad_eval.report.merge import UNMEASURED
    from nomad_eval.report.provenance import provenance

    try:
        rt = runtime(typed(cfg))
        config = rt.resolved_config()
        with err_console.capture():  # the suite's warnings are printed by the run itself, not twice
            fingerprint, goldens = rt.fingerprint, rt.goldens_hash
    except Exception as exc:  # whatever stops this check stops the run too, which then reports it properly
        return f"cannot check it against this config ({type(exc).__name__}: {exc})"
    ident = fields(old.get("identity"))
    reasons = []
    if ident.get("fingerprint") != fingerprint:
        reasons.append(f"corpus fingerprint {ident.get('fingerprint')} → {fingerprint}")
    if ident.get("goldens_hash") != goldens:
        reasons.append(f"goldens hash {ident.get('goldens_hash')} → {goldens}")
    prov, now = fields(old.get("provenance")), provenance()

    def code(commit: Any, dirty: Any, diff: Any) -> str:
        return f"{str(commit)[:10]}{f' (dirty {diff})' if dirty else ''}" if commit else "unknown"

    # The diff's hash too: two runs on a dirty tree are the same code only with the same uncommitted edits.
    was = (prov.get("git_commit"), prov.get("git_dirty"), prov.get("git_diff"))
    if was != (now.git_commit, now.git_dirty, now.git_diff) or not prov:
        reasons.append(f"code version {code(*was)} → {code(now.git_commit, now.git_dirty, now.git_diff)}")
    # Settings that never change what is measured (where caches live, verbosity, resume itself) may differ.
    before, after = ({k: json.dumps(v, sort_keys=True) for k, v in key_paths(tree) if not isinstance(v, dict)}
                     for tree in (old.get("config") or {}, config))
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k) and k not in UNMEASURED)
    if changed:
        reasons.append("config differs at " + ", ".join(changed[:5]) + (" …" if len(changed) > 5 else ""))
    return "; ".join(reasons) or None


def _incomplete(out: Path) -> str | None:
    """Why a finished run's folder cannot be kept as it is: not finished, files changed or missing since its
    manifest, or (an older run without one) no cases.jsonl, which every scoring tier writes."""
    if (why := rf.problem(out)) is not None or (out / rf.MANIFEST).exists():
        return why
    return None if (out / "cases.jsonl").is_file() else f"{out / 'cases.jsonl'} is missing"


def _resumable(cfg: DictConfig) -> bool:
    """With resume=true, a job already finished for this exact task, code and config keeps its results and is not
    re-run; one whose earlier report no longer stands for it is re-run, saying why in one line."""
    if not cfg.get("resume") or cfg.tier.name in ("compare", "promote", "corpus", "dataset", "calibrate"):
        return False
    try:
        out = run_dir(cfg.paths.run_dir)
        old = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        return False  # nothing finished here yet
    why = (_stale(cfg, old) if isinstance(old, dict) else "its report.json is not a report") or _incomplete(out)
    if why:
        err_console.print(f"resume: re-running {out}: {why}", markup=False)
        return False
    old["sweep_id"] = sweep_id()  # it now belongs to this sweep, so the merge takes it
    with rf.reopened(out):
        write_atomic(out / "report.json", json.dumps(old, indent=2))
    err_console.print(f"resume: kept the finished results in {out}")
    return True


def _full_disk(cfg: DictConfig, exc: BaseException) -> NomadError | None:
    """A full disk met outside our own writers (which name their file): named by the file when the error has one,
    else by the data folder, whose caches are then the writers."""
    if isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return NomadError(f"no space left on {cfg.paths.data_dir} (a cache there could not be written); free "
                          "space there and run again", 2)
    if isinstance(exc, OSError) and exc.filename:
        return no_space(Path(str(exc.filename)), exc)
    if isinstance(exc, OSError) and exc.errno in FULL:
        return NomadError(f"no space left on device ({exc.strerror}) under {cfg.paths.data_dir} or the run "
                          "folder; free space and run again", 2)
    return None


def _missing_package(exc: BaseException | None) -> NomadError | None:
    """A package the configuration needs (a store client, a model runtime) that is not installed: the setup is
    wrong (exit 2), said in one line rather than a traceback. A module of nomad-eval's own missing is a bug."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name or exc.name.split(".")[0] == "nomad_eval":
        return None
    return NomadError(f"this configuration needs the Python package that provides `{exc.name}`, which is not "
                      f"installed: pip install it (docs/project.md lists the optional packages), or choose "
                      "another backend", 2)


def run_tier(cfg: DictConfig) -> int:
    from nomad_eval.cli.suites import run_suites, suite_names

    sweep = multirun()
    try:
        names = suite_names(cfg)
        code = _run_one(cfg, sweep) if names is None else \
            run_suites(cfg, names, run_dir(cfg.paths.run_dir), lambda one: _run_one(one, sweep))
    except NomadError as exc:  # several suites refused before any ran
        err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        code = exc.exit_code
    if not sweep:
        _drop_empty_run_dir(cfg)
    if code and not sweep:
        sys.exit(code)
    return code


def _run_one(cfg: DictConfig, multirun: bool) -> int:
    """One suite's run of the tier: its exit code, with a failure recorded in its folder. The run holds its folder
    for its lifetime (a second run into the same folder waits) and marks it incomplete until the seal."""
    timeout = float(cfg.store.lock_timeout)  # the wait the store allows another process, for its folder too
    with owned(cfg.paths.get("run_dir"), timeout, bool(cfg.get("quiet"))) as out:
        if _resumable(cfg):
            return 0
        if out is not None:
            rf.begin(out)
        started = time.time()
        code = _job(cfg, multirun, out)
    _last_line(cfg, multirun, started)
    return code


def _job(cfg: DictConfig, multirun: bool, out: Path | None) -> int:
    from hydra.errors import InstantiationException

    from nomad_eval.base.paths import project_dir
    from nomad_eval.cli.config_check import check_config
    from nomad_eval.cli.targets import check_targets
    from nomad_eval.run.registry import tier_run

    try:
        try:
            config = check_config(cfg)
            check_targets(cfg, project_dir())
            require_safe("suite", suite=cfg.get("suite"))  # it names a file to read: no path may hide in it
            # A sweep job's tables stay off the console (they are in its report; the sweep's summary compares them
            # all at the end): the job prints one line instead (`_last_line`). verbose=true shows them.
            quiet_job = multirun and not cfg.get("verbose")
            with console.capture() if quiet_job else contextlib.nullcontext():
                code = int(tier_run(config.tier.name, config.tier.target)(config))  # every tier takes the typed config
            if out is not None and rf.written(out):
                rf.seal(out)  # a tier that wrote results without sealing them (finish() seals its own)
        except InstantiationException as exc:
            # Hydra wraps a backend constructor's own clear error (a store or server it cannot reach): unwrap it.
            if isinstance(exc.__cause__, NomadError):
                raise exc.__cause__ from None
            if (missing := _missing_package(exc.__cause__)) is not None:
                raise missing from None
            raise
        except ModuleNotFoundError as exc:
            if (missing := _missing_package(exc)) is not None:
                raise missing from None
            raise
        except (OSError, sqlite3.Error) as exc:
            if (full := _full_disk(cfg, exc)) is not None:
                raise full from None
            raise
    except NomadError as exc:
        err_console.print(f"[red]error:[/] {escape(str(exc))}", soft_wrap=True)
        _record_failure(cfg, str(exc))
        return exc.exit_code
    except Exception as exc:
        if not multirun:
            raise
        # One bad config must not hide the other jobs of a sweep: record it and go on. It measured nothing, so
        # it is no verdict on the system under test (exit 2, as on its own: __main__.py).
        err_console.print(traceback.format_exc())
        _record_failure(cfg, f"{type(exc).__name__}: {exc}")
        return 2
    return code


def _last_line(cfg: DictConfig, multirun: bool, started: float) -> None:
    """A run ends naming its HTML report; a sweep job, with one line of its verdict and headline numbers."""
    try:
        out = run_dir(cfg.paths.run_dir)
    except Exception:  # the config itself failed: there is no run folder to name
        return
    html = out / "report.html"
    if not html.is_file() or html.stat().st_mtime < started - 1:
        return  # no report from this run (a corpus check, a promote, a compare of another run)
    if not multirun:
        if '"verdict"' not in (out / "report.json").read_text(errors="replace"):  # a gated run named it already
            console.print(f"report: {html}", markup=False, highlight=False)
        return
    from hydra.core.hydra_config import HydraConfig

    from nomad_eval.report.console_view import job_line
    from nomad_eval.report.schema import Report

    try:
        report = Report.model_validate_json((out / "report.json").read_text())
    except (OSError, ValueError):
        return
    console.print(job_line(report, out, HydraConfig.get().job.num), markup=False, highlight=False)


def _drop_empty_run_dir(cfg: DictConfig) -> None:
    """A run that wrote no results (a corpus check, a status, a promote) leaves no folder behind: Hydra makes
    outputs/<date>/<time>_<tier>/ before any tier runs, and a tree of folders holding only Hydra's own config copy
    and log hides the runs that matter. Only Hydra's default folders, only when nothing else is in them."""
    from hydra.core.hydra_config import HydraConfig

    if cfg.paths.get("run_dir") or not HydraConfig.initialized():
        return
    hc = HydraConfig.get()
    out = Path(hc.runtime.output_dir)
    if not out.is_dir() or Path(hc.run.dir).is_absolute() and not str(hc.run.dir).startswith(str(Path.cwd())):
        return
    names = {p.name for p in out.iterdir()}
    if names - {".hydra", f"{hc.job.name}.log", rf.RUN_LOCK, rf.WRITING}:
        return
    shutil.rmtree(out, ignore_errors=True)
    cwd = Path.cwd().resolve()
    parent = out.resolve().parent
    while parent != cwd and cwd in parent.parents:  # the date folder and outputs/, when they are left empty
        with contextlib.suppress(OSError):
            parent.rmdir()
        parent = parent.parent
