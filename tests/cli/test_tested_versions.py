"""The `tested` extra carries the versions the tests pass with, for users: the same pins as requirements.lock, every
runtime dependency among them, and the wheel carries them in a way pip honours."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from nomad_eval.base.paths import REPO
from tests.cli.conftest import user_env

sys.path.insert(0, str(REPO / "scripts"))
import lock  # noqa: E402  (scripts/ is not a package)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        name, eq, version = line.strip().partition("==")
        if eq:
            out[_norm(name)] = version
    return out


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
TESTED = _pins(PROJECT["optional-dependencies"]["tested"])
LOCKED = _pins([x for x in (REPO / "requirements.lock").read_text().splitlines() if not x.startswith("#")])


def test_the_tested_extra_agrees_with_the_lock_and_holds_every_runtime_dependency() -> None:
    assert len(TESTED) == len(PROJECT["optional-dependencies"]["tested"])  # each entry a name==version pin
    assert {n: LOCKED.get(n) for n in TESTED} == TESTED  # the lock's versions, every one
    declared = {_norm(re.split(r"[ ;<>=!~\[(]", d, maxsplit=1)[0]) for d in PROJECT["dependencies"]}
    assert declared - {"torch"} <= set(TESTED)  # torch: pinned in dependencies, its CPU build from its own index
    # scripts/lock.py wrote it from this environment's runtime closure: nothing added or left out since.
    assert {_norm(n): v for n, v in lock.closure(set(), []).items()} == TESTED


@pytest.mark.slow
def test_the_wheel_carries_the_pins_and_pip_installs_exactly_them(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    carried = _pins([m.group(1) for m in re.finditer(r'^Requires-Dist: ([^;\s]+==[^;\s]+) ?; extra == "tested"$', meta,
                                                     re.M)])
    assert carried == TESTED
    # Offline, in the environment the tests run in (made from requirements.lock): pip finds every pin satisfied and
    # nothing to fetch, so the only thing it would install is nomad-eval itself.
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--quiet", "--report",
                        "-", f"{wheel}[tested]"], env=user_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    installs = [i["metadata"]["name"] for i in json.loads(r.stdout)["install"]]
    assert installs == ["nomad-eval"], installs
    # And the pins bind: asking for another version of a pinned package beside the extra cannot be resolved.
    other = next(iter(TESTED))
    clash = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--quiet",
                            f"{wheel}[tested]", f"{other}!={TESTED[other]}"], env=user_env(), capture_output=True,
                           text=True, timeout=300)
    assert clash.returncode != 0 and other in clash.stderr, clash.stderr[-2000:]
