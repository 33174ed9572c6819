"""`nomad-eval init <dir>`: scaffold a project that passes `tier=corpus action=check` and runs at once.

Handled before Hydra (see __main__.cli): `init` is a command, not an override.
"""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path

from nomad_eval.base.paths import PACKAGE

SCAFFOLD = PACKAGE / "scaffold"
# Template names without a leading dot, so the wheel's package-data globs (which skip dotfiles) carry them.
RENAMES = {"gitignore": ".gitignore", "github": ".github"}


def _target(rel: Path) -> Path:
    return Path(*(RENAMES.get(part, part) for part in rel.parts))


def _version() -> str:
    try:
        return metadata.version("nomad-eval")
    except metadata.PackageNotFoundError:
        return "0.1.0"


def scaffold(directory: Path, suite: str = "core") -> tuple[list[Path], list[Path]]:
    """Write the project's files under `directory`; returns (written, kept): an existing file is never replaced."""
    written, kept = [], []
    for src in sorted(p for p in SCAFFOLD.rglob("*") if p.is_file()):
        rel = _target(src.relative_to(SCAFFOLD))
        if rel == Path("goldens/core.jsonl"):
            rel = Path("goldens") / f"{suite}.jsonl"
        dest = directory / rel
        if dest.exists():
            kept.append(rel)
            continue
        text = src.read_text(encoding="utf-8")
        if rel.name == "nomad-eval.yml":
            text = text.replace("{version}", _version())
        if rel == Path("conf/experiment/ci.yaml"):
            text = text.replace("suite: core", f"suite: {suite}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        written.append(rel)
    return written, kept


def init_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="nomad-eval init",
        description="Create a nomad-eval project: corpus/, goldens/, conf/experiment/ci.yaml, a CI workflow, "
                    ".gitignore. Existing files are kept.")
    parser.add_argument("directory", type=Path, help="the project folder (created if missing)")
    parser.add_argument("--suite", default="core", help="name of the example suite, goldens/<suite>.jsonl")
    args = parser.parse_args(argv)
    suite = str(args.suite)
    if not suite.replace("_", "").replace("-", "").isalnum():
        parser.error(f"--suite {suite!r}: use letters, digits, '-' and '_'")
    directory: Path = args.directory
    if directory.exists() and not directory.is_dir():
        parser.error(f"{directory} exists and is not a folder")
    directory.mkdir(parents=True, exist_ok=True)
    written, kept = scaffold(directory, suite)
    for rel in written:
        print(f"  created {directory / rel}")
    for rel in kept:
        print(f"  kept    {directory / rel} (already there)")
    suite_arg = "" if suite == "core" else f" suite={suite}"
    print(f"\nnext, from {directory}:\n"
          f"  nomad-eval tier=corpus action=check{suite_arg}   # the goldens name real documents\n"
          f"  nomad-eval{suite_arg}                             # the retrieval tier\n"
          f"  nomad-eval tier=promote promote.run=outputs/<run>  # file it as the baseline CI compares with")
    return 0
