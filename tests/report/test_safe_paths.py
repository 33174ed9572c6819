"""Values read from reports and results never choose where a file is written: promote refuses them (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from nomad_eval.base import runfolder as rf
from nomad_eval.base.errors import NomadError
from nomad_eval.cli.entry import run_tier
from nomad_eval.judges.calibration import labels_ref
from nomad_eval.report.schema import Identity, Report
from nomad_eval.tiers.calibrate import file_result
from tests.conftest import MINI

GOOD_FP = "0123456789abcdef"


def _report(folder: Path, fingerprint: str = GOOD_FP, tier: str = "retrieval") -> Path:
    ident = Identity(fingerprint=fingerprint, goldens_hash="g", suite="mini", embedder="e", pipeline="p")
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(Report(tier=tier, identity=ident, metrics={"recall@5": 1.0})
                                        .model_dump_json())
    return folder


def _files(root: Path) -> set[Path]:
    # SQLite's -wal/-shm files come and go as another test's cache connection closes: not anything written here.
    # The run's own folder lock (held by every run for its lifetime) is not a result either.
    return {p for p in root.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm"))
            and p.name != rf.RUN_LOCK}


@pytest.mark.parametrize(("fingerprint", "tier", "variant", "named"), [
    ("../../x", "retrieval", None, "'../../x'"),
    ("0123456789ABCDEF", "retrieval", None, "'0123456789ABCDEF'"),  # not our format: upper case
    (GOOD_FP, "../../evil", None, "'../../evil'"),
    (GOOD_FP, "retrieval", "../../v", "'../../v'"),
    (GOOD_FP, "retrieval", ".hidden", "'.hidden'"),
])
def test_promote_refuses_a_path_in_a_report(tmp_path: Path, make_cfg: Callable[..., DictConfig],
                                            capsys: pytest.CaptureFixture[str], fingerprint: str, tier: str,
                                            variant: str | None, named: str) -> None:
    run = _report(tmp_path / "runs" / "hostile", fingerprint, tier)
    baselines = tmp_path / "area" / "baselines"
    before = _files(tmp_path.parent)  # ../../x from baselines/ lands beside tmp_path: look there too
    extra = [f"promote.variant={variant}"] if variant else []
    with pytest.raises(SystemExit) as exc:
        run_tier(make_cfg("tier=promote", f"promote.run={run}", f"paths.baselines_dir={baselines}", *extra))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "not usable in a path" in err
    assert ("promote.variant" if variant else str(run / "report.json")) in err  # where the value came from
    assert _files(tmp_path.parent) == before and not baselines.exists()  # nothing written, in baselines/ or out


def test_promote_of_a_good_report_still_files_it(tmp_path: Path, make_cfg: Callable[..., DictConfig]) -> None:
    run = _report(tmp_path / "runs" / "good")
    baselines = tmp_path / "baselines"
    assert run_tier(make_cfg("tier=promote", f"promote.run={run}", f"paths.baselines_dir={baselines}",
                             "promote.variant=v2")) == 0
    assert _files(baselines) == {baselines / GOOD_FP / "retrieval-v2.json"}


def test_a_matrix_with_a_path_for_a_fingerprint_is_refused(tmp_path: Path,
                                                            make_cfg: Callable[..., DictConfig]) -> None:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    row = {"model": "x", "fingerprint": "../../m", "goldens_hash": "h", "suite": "core", "oracle": 1.0, "e2e": 0.5,
           "gap": 0.5, "refusal_recall": None, "false_refusal_rate": None, "leakage_rate": None, "groundedness": None}
    (sweep / "matrix.json").write_text(json.dumps({"rows": [row]}))
    before = _files(tmp_path.parent)
    with pytest.raises(SystemExit) as exc:
        run_tier(make_cfg("tier=promote", f"promote.run={sweep}", f"paths.baselines_dir={tmp_path / 'b'}"))
    assert exc.value.code == 2 and _files(tmp_path.parent) == before


def test_a_suite_name_holding_a_path_is_refused(make_cfg: Callable[..., DictConfig],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run_tier(make_cfg(*MINI, "suite=../goldens/mini"))
    assert exc.value.code == 2 and "suite '../goldens/mini' is not usable in a path" in capsys.readouterr().err


def test_a_calibration_result_cannot_name_a_file_elsewhere(tmp_path: Path) -> None:
    run = tmp_path / "cal"
    run.mkdir()
    labels = tmp_path / "labels.jsonl"
    labels.write_text("{}\n")
    result = {"rubric": "faithfulness-v1", "agreement": 0.9, "n": 30, "filed_as": "../../conf/x.json",
              "judge": {"backend": "openai", "model": "judge"}, "labels": labels_ref(labels)}
    (run / "calibration.json").write_text(json.dumps(result))
    before = _files(tmp_path.parent)
    with pytest.raises(NomadError, match=r"'\.\./\.\./conf/x\.json' is not usable in a path") as exc:
        file_result(run, tmp_path / "calibration")
    assert exc.value.exit_code == 2 and _files(tmp_path.parent) == before
    result["filed_as"] = "faithfulness-v1--judge.json"
    (run / "calibration.json").write_text(json.dumps(result))
    assert file_result(run, tmp_path / "calibration") == tmp_path / "calibration" / "faithfulness-v1--judge.json"
    assert json.loads((tmp_path / "calibration" / "faithfulness-v1--judge.json").read_text()) == result
