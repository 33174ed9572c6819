"""One console for the whole run, and progress bars that stay silent off a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


def _console(stderr: bool) -> Console:
    # Off a terminal (CI logs, pipes) keep lines whole: grep must find a message in one piece.
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 200
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


console = _console(stderr=False)
err_console = _console(stderr=True)


@contextmanager
def progress_bar(description: str, total: int, quiet: bool = False) -> Iterator[Progress]:
    prog = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=err_console, disable=quiet or not err_console.is_terminal, transient=True,
    )
    with prog:
        prog.add_task(description, total=total)
        yield prog
