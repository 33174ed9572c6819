"""`nomad-eval init <dir>`: scaffold a project that passes `tier=corpus action=check` and runs at once.

Handled before Hydra (see __main__.cli): `init` is a command, not an override. On an existing project it only adds
what is missing: a file already there is left alone, and the example document and suite go only into a folder
that does not exist yet (a user who deleted the example does not get it back in the corpus and its fingerprint).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from nomad_eval.base.paths import CHECKOUT, PACKAGE
from nomad_eval.cli.where import is_project

SCAFFOLD = PACKAGE / "scaffold"
# Template names without a leading dot, so the wheel's package-data globs (which skip dotfiles) carry them.
RENAMES = {"gitignore": ".gitignore", "github": ".github"}
# The example content's folders: written only into a new project, never beside the user's own documents.
EXAMPLES = ("corpus", "goldens")
WORKFLOW = Path(".github/workflows/nomad-eval.yml")


@dataclass
class Scaffolded:
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)        # already there, left alone
    skipped: list[Path] = field(default_factory=list)     # example content for a folder the project already has


def _target(rel: Path) -> Path:
    return Path(*(RENAMES.get(part, part) for part in rel.parts))


def _direct_url() -> dict[str, object] | None:
    """How pip installed this copy of nomad-eval, when from a URL or a path (PEP 610's direct_url.json)."""
    try:
        text = metadata.distribution("nomad-eval").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    data = json.loads(text) if text else None
    return data if isinstance(data, dict) else None


def installed_source(project: Path) -> tuple[str, bool]:
    """What pip installs to get this very copy of nomad-eval in CI, and whether that spec is a path that exists only
    on this machine. A checkout gives its folder; a git install its URL at its commit; a path inside the project, a
    relative one."""
    direct = None if CHECKOUT is not None else _direct_url()
    url = str(direct.get("url", "")) if direct else ""
    vcs = direct.get("vcs_info") if direct else None
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return f"git+{url}@{vcs['commit_id']}", False
    if url and not url.startswith("file:"):
        return url, False
    local = Path(unquote(urlparse(url).path)) if url else CHECKOUT
    if local is None:
        try:
            return f"nomad-eval=={metadata.version('nomad-eval')}", False
        except metadata.PackageNotFoundError:
            return "nomad-eval", False
    local, root = local.resolve(), project.resolve()
    if local.is_relative_to(root):
        return f"./{local.relative_to(root).as_posix()}", False
    return str(local), True


def scaffold(directory: Path, suite: str = "core", source: str = "nomad-eval") -> Scaffolded:
    """Write what the project under `directory` is missing; an existing file is never replaced."""
    out = Scaffolded()
    # The example document and suite belong together: both or neither, and neither in an existing project.
    existing = set(EXAMPLES) if is_project(directory) else set()
    for src in sorted(p for p in SCAFFOLD.rglob("*") if p.is_file()):
        rel = _target(src.relative_to(SCAFFOLD))
        if rel == Path("goldens/core.jsonl"):
            rel = Path("goldens") / f"{suite}.jsonl"
        dest = directory / rel
        if dest.exists():
            out.kept.append(rel)
            continue
        if rel.parts[0] in existing:
            out.skipped.append(rel)
            continue
        text = src.read_text(encoding="utf-8")
        if rel == WORKFLOW:
            text = text.replace("{source}", json.dumps(source))  # a JSON string is a YAML double-quoted scalar
            text = text.replace("{suite_arg}", "" if suite == "core" else f" suite={suite}")
            text = text.replace("{suite}", suite)
        if rel == Path("conf/experiment/ci.yaml"):
            text = text.replace("suite: core", f"suite: {suite}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        out.written.append(rel)
    return out


def _parse(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="nomad-eval init",
        description="Create a nomad-eval project: corpus/, goldens/, conf/experiment/ci.yaml, a CI workflow, "
                    ".gitignore. On an existing project only what is missing is added.")
    parser.add_argument("directory", type=Path, help="the project folder (created if missing)")
    parser.add_argument("--suite", default="core", help="name of the example suite, goldens/<suite>.jsonl")
    parser.add_argument("--source", default=None,
                        help="what CI installs nomad-eval from (a pip spec: git+https://...@<commit>, a wheel's "
                             "path in the project, nomad-eval==<version>); default: where this copy came from")
    return parser, parser.parse_args(argv)


def _report(directory: Path, done: Scaffolded, source: str, local: bool) -> None:
    for rel in done.written:
        print(f"  created    {directory / rel}")
    for rel in done.kept:
        print(f"  left alone {directory / rel} (already there)")
    for rel in done.skipped:
        print(f"  not added  {directory / rel} (an example: it goes only into a new project)")
    if WORKFLOW in done.written and local:
        print(f"\nnote: the CI workflow installs nomad-eval from {source}, a path a CI runner does not have; set "
              f"NOMAD_EVAL_SOURCE in {directory / WORKFLOW} to a git URL at a commit, or re-create it with "
              "`nomad-eval init <dir> --source <spec>`")


def init_main(argv: list[str]) -> int:
    parser, args = _parse(argv)
    suite = str(args.suite)
    if not suite.replace("_", "").replace("-", "").isalnum():
        parser.error(f"--suite {suite!r}: use letters, digits, '-' and '_'")
    directory: Path = args.directory
    if directory.exists() and not directory.is_dir():
        parser.error(f"{directory} exists and is not a folder")
    directory.mkdir(parents=True, exist_ok=True)
    source, local = (str(args.source), False) if args.source else installed_source(directory)
    done = scaffold(directory, suite, source)
    _report(directory, done, source, local)
    if not done.written:
        print(f"\n{directory} already has everything init writes: nothing changed")
        return 0
    suite_arg = "" if suite == "core" else f" suite={suite}"
    print(f"\nnext, from {directory}:\n"
          f"  nomad-eval tier=corpus action=check{suite_arg}   # the goldens name real documents\n"
          f"  nomad-eval{suite_arg}                             # the retrieval tier\n"
          f"  nomad-eval tier=promote promote.run=latest{suite_arg}  # file it as the baseline CI compares with")
    return 0
