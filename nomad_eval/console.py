"""One console for the whole run, and progress bars that stay silent off a terminal."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


@contextmanager
def progress_bar(description: str, total: int, quiet: bool = False) -> Iterator[Progress]:
    prog = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=err_console, disable=quiet or not err_console.is_terminal, transient=True,
    )
    with prog:
        prog.add_task(description, total=total)
        yield prog
