"""The import graph of the package, read from its source (ast), module-level and function-level imports alike:
imports point down the floors (docs/DESIGN.md#layers), no tier module imports another one (a tier reaches
another by name, run/registry.py), and no import circle, not even through an import inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nomad_eval.base.paths import PACKAGE

# The floors, lowest first: a module imports only from its own floor and those before it. judges/ and harness/
# share a floor in the design; harness reads judges' settings, never the other way.
FLOORS = ("base", "metrics", "records", "backends", "data", "rag", "judges", "harness", "core", "report", "gate",
          "config", "run", "tiers", "cli")
# Outside the floors: the package's public names (imported lazily by name), the command line's entry (above
# cli/), and the example code a project copies (it uses the floors as a user would).
OUTSIDE = ("nomad_eval", "nomad_eval.__main__", "nomad_eval.examples", "nomad_eval.examples.keyword_retriever")


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    """Each module's imports of the package's own modules (a name imported from a package resolves to the
    module of that name when there is one, else to the package)."""
    mods = _modules()

    def resolve(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "nomad_eval":
                targets = [resolve(f"{node.module}.{a.name}") for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names if a.name.split(".")[0] == "nomad_eval"]
            else:
                continue
            edges[m] |= {t for t in targets if t and t != m}
    return edges


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return _graph()


def _floor(module: str) -> int | None:
    parts = module.split(".")
    return FLOORS.index(parts[1]) if len(parts) > 1 and parts[1] in FLOORS else None


def test_every_module_is_on_a_floor() -> None:
    assert sorted(m for m in _modules() if _floor(m) is None and m not in OUTSIDE) == []


def test_imports_point_down_the_floors(graph: dict[str, set[str]]) -> None:
    up = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                if (a := _floor(m)) is not None and (b := _floor(t)) is not None and b > a)
    assert up == []


def test_no_tier_imports_another(graph: dict[str, set[str]]) -> None:
    tiers = "nomad_eval.tiers."
    found = sorted(f"{m} -> {t}" for m, ts in graph.items() for t in ts
                   if m.startswith(tiers) and t.startswith(tiers))
    assert found == []


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    edges = graph
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                circles.append([*path[path.index(t):], t])
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert circles == []


def test_the_graph_sees_function_level_imports(graph: dict[str, set[str]]) -> None:
    """The checks above would miss a circle hidden in a function if the walk did not reach inside functions."""
    assert "nomad_eval.cli.entry" in graph["nomad_eval.__main__"]  # imported inside main()


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m] - seen)
    return seen


def test_a_retrieval_run_reaches_the_measuring_floors_only(graph: dict[str, set[str]]) -> None:
    """The retrieval tier's module imports what measures (the skeleton runs it, run/registry.py): not the gate, the
    report's writers and renderers, the judges nor the answer scoring, so a change there cannot break retrieval."""
    reached = _reach(graph, "nomad_eval.tiers.retrieval")
    assert len(reached) <= 70, len(reached)
    far = ("nomad_eval.gate.", "nomad_eval.judges.", "nomad_eval.report.html", "nomad_eval.report.markdown",
           "nomad_eval.report.console_view", "nomad_eval.run.folder", "nomad_eval.metrics.upstream.generation")
    assert sorted(m for m in reached if m.startswith(far)) == []
