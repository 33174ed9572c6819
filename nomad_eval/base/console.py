"""One console for the whole run, and progress bars that stay silent off a terminal."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def _console(stderr: bool) -> Console:
    # Off a terminal (CI logs, pipes) keep lines whole: grep must find a message in one piece.
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 200
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


console = _console(stderr=False)
err_console = _console(stderr=True)


class LineProgress:
    """Progress off a terminal (a log, a pipe): a plain line at most every `every` seconds and one at the end,
    with the count and the rate, instead of a bar that would fill the log with redraws. Same calls as rich's."""

    def __init__(self, description: str, total: int, every: float = 10.0, silent: bool = False) -> None:
        self.description, self.total, self.every, self.silent = description, total, every, silent
        self.done = 0
        self.task_ids = [TaskID(0)]
        self.started = self.last = time.monotonic()

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        self.done += int(advance)
        now = time.monotonic()
        if self.silent:
            return
        if now - self.last >= self.every or (self.done >= self.total > 0):
            self.last = now
            self.line(now)

    def line(self, now: float) -> None:
        spent = now - self.started
        rate = f", {spent / self.done:.2f} s each" if self.done else ""
        err_console.print(f"{self.description}: {self.done}/{self.total} in {spent:.0f} s{rate}", markup=False)


@contextmanager
def progress_bar(description: str, total: int, quiet: bool = False) -> Iterator[Progress | LineProgress]:
    """A bar on a terminal; timed lines in a log; nothing when quiet or in CI (the CI environment variable)."""
    if not err_console.is_terminal:
        if quiet or os.environ.get("CI") or total <= 0:
            yield LineProgress(description, total, silent=True)
        else:
            yield LineProgress(description, total)
        return
    prog = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), console=err_console, disable=quiet, transient=True,
    )
    with prog:
        prog.add_task(description, total=total)
        yield prog
