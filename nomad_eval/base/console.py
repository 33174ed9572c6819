"""One console for the whole run, and progress bars that stay silent off a terminal."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar, cast

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderHook
from rich.segment import Segment

T = TypeVar("T")
R = TypeVar("R")

if TYPE_CHECKING:  # rich's bars load with the first bar: a corpus check or --help draws none
    from rich.progress import Progress, TaskID

# Control characters in printed text (an escape sequence in a golden id, a document name, a server's error body)
# are shown as their Unicode control pictures, one character each, so the terminal never acts on them and rich's
# style spans stay aligned. Tab and newline are layout, kept.
_PICTURES = MappingProxyType({c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)} | {
    0x7F: "\u2421"} | {c: "\ufffd" for c in range(0x80, 0xA0)})


class _Printable:
    """A renderable shown with every content segment made printable; tables and panels nested in it render
    through it too. rich's own cursor and style codes are control segments or styles, applied after this."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for seg in console.render(self.inner, options):
            yield seg if seg.control else Segment(seg.text.translate(_PICTURES), seg.style, seg.control)


class _EscapeControls(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Printable(r) for r in renderables]


def _console(stderr: bool) -> Console:
    # Off a terminal (CI logs, pipes) keep lines whole: grep must find a message in one piece.
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 200
    made = Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)
    made.push_render_hook(_EscapeControls())
    return made


console = _console(stderr=False)
err_console = _console(stderr=True)


class LineProgress:
    """Progress off a terminal (a log, a pipe): a plain line at most every `every` seconds and one at the end,
    with the count and the rate, instead of a bar that would fill the log with redraws. Same calls as rich's.
    `sparse` (quiet, or CI): a line a minute, and the last one only after a run long enough to have printed one,
    so a short run stays silent and a long one is never mistaken for a hung one."""

    def __init__(self, description: str, total: int, every: float = 10.0, silent: bool = False,
                 sparse: bool = False) -> None:
        self.description, self.total, self.silent, self.sparse = description, total, silent, sparse
        self.every = SPARSE_EVERY if sparse else every
        self.done, self.printed = 0, False
        self.task_ids = [cast("TaskID", 0)]
        self.started = self.last = time.monotonic()

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        self.done += int(advance)
        if self.silent:
            return
        now = time.monotonic()
        finished = self.done >= self.total > 0 and (self.printed or not self.sparse)
        if now - self.last >= self.every or finished:
            self.last = now
            self.line(now)

    def line(self, now: float) -> None:
        self.printed = True
        spent = now - self.started
        rate = f", {spent / self.done:.2f} s each" if self.done else ""
        # On stdout, with the run's other lines: stderr is kept for what to act on, the verdict's cause first.
        console.print(f"{self.description}: {self.done}/{self.total} in {spent:.0f} s{rate}", markup=False)


SPARSE_EVERY = 60.0  # seconds between lines under quiet=true or in CI


@contextmanager
def progress_bar(description: str, total: int, quiet: bool = False) -> Iterator[Progress | LineProgress]:
    """A bar on a terminal (none when quiet); timed lines in a log: every 10 s, or every minute when quiet or in
    CI (the CI environment variable), so a long run always shows it is moving."""
    if not err_console.is_terminal:
        yield LineProgress(description, total, silent=total <= 0, sparse=quiet or bool(os.environ.get("CI")))
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    prog = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), console=err_console, disable=quiet, transient=True,
    )
    with prog:
        prog.add_task(description, total=total)
        yield prog


def map_in_order(fn: Callable[[T], R], tasks: Sequence[T], workers: int, label: str, quiet: bool) -> list[R]:
    """`fn` over `tasks`, up to `workers` calls at once, the results in the order of `tasks`, with a progress bar
    counting them. The first failure stops the rest; what finished stays where `fn` put it (a cache). Ctrl-C says
    so at once and stops once the calls under way return; a second Ctrl-C stops the process then and there."""
    from concurrent.futures import ThreadPoolExecutor

    out: list[R] = []
    with progress_bar(label, len(tasks), quiet) as prog, ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        try:
            for result in pool.map(fn, tasks):
                out.append(result)
                prog.advance(prog.task_ids[0])
        except KeyboardInterrupt:
            err_console.print("stopping after the current answer (Ctrl-C again stops at once)", markup=False)
            with _second_interrupt_exits():
                pool.shutdown(wait=True, cancel_futures=True)
            raise
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return out


@contextmanager
def _second_interrupt_exits() -> Iterator[None]:
    """While the calls under way finish, Ctrl-C ends the process at once: a worker thread inside a model call
    cannot be interrupted, and the interpreter would wait for it on the way out. Every finished answer is
    already committed to its cache."""
    import signal
    import sys
    import threading

    def now(signum: int, frame: object) -> None:
        sys.stderr.write("stopped\n")
        sys.stderr.flush()
        os._exit(130)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, now)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def timed_load(what: str, load: Callable[[], object], quiet: bool = False) -> None:
    """Runs `load` (a model's load) before the progress of the work it serves starts, and says once how long it
    took: left to the work's first call, the load would be counted in the progress line's time and rate."""
    started = time.monotonic()
    load()
    if not quiet and (err_console.is_terminal or not os.environ.get("CI")):
        console.print(f"loading {what}... {time.monotonic() - started:.1f} s", markup=False)
