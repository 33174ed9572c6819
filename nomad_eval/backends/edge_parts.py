"""A large embedded-store shard split in two and searched on two cores: part 1 by a worker process.

Why a process and not a thread: `EdgeShard.query` holds the GIL for the whole search, and the engine scans a
shard's segments one after another on the calling thread whatever its thread settings, so one shard is searched
on one core. Two shards searched by two processes overlap. A shard directory is locked to one process at a time,
so part 1 is open either in the worker (while searches run) or here (for anything else: the worker is stopped
first and part 1 reopened in this process).

Layout beside the original shard `<root>/dim-<d>/` (part 0): `<root>/dim-<d>.part-1/` (part 1, same config) and
`<root>/dim-<d>.parts.json`, which says how far the split got, so a crash never loses a point:

- no file: not split. A part-1 directory is then a copy a crash interrupted; part 0 still holds every point, so
  the copy is discarded and the split redone by the next `prepare_search`.
- "copied": part 1 holds every point hashed to it, flushed; part 0 may still hold some of them. Opening the store
  finishes the deletion from part 0 (deleting an absent id is a no-op) and writes "split".
- "split": every point is in the part `part_of(id)` names, and new points are written there. A split is never
  undone: a store that later shrinks keeps its two parts (its searches stay exact; equal scores order by id).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import time
import uuid
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from nomad_eval.backends.base import Hit
from nomad_eval.base.errors import NomadError
from nomad_eval.base.sqlite_store import move_aside

# One shard of the embedded store: backends/edge.py's EdgeStore, which imports this module. It is named `Any` here
# rather than imported back, so the two modules do not import each other; what this module uses of it is `_qe`,
# `_shard`, `root`, `dim`, `tag_key`, `tag`, `_always_filter`, `open_part`, `prepare_search`, `_search_here` and
# `close`.
PartStore = Any
# Opens part 1 in the worker process from (root, dim, tag_key, tag): a module-level function of the store's, so the
# spawned process can be handed it by name.
Opener = Callable[[str, int, str, str], PartStore]


COPIED, SPLIT = "copied", "split"
BATCH = 512
READY_TIMEOUT_S = 3600.0  # the worker may build part 1's int8 copies before it is ready (~15 s at 500k points)
SEARCH_TIMEOUT_S = 300.0  # one search of a part takes milliseconds; this only catches a worker that hangs


def part_of(point_id: object) -> int:
    """0 or 1, the same in every process and run (Python's own str hash is salted per process)."""
    key = str(point_id)
    try:
        key = str(uuid.UUID(key))  # the engine hands ids back as UUID objects: one spelling for both directions
    except ValueError:
        pass
    return hashlib.blake2b(key.encode(), digest_size=1).digest()[0] & 1


def part_dir(root: Path, dim: int) -> Path:
    return root / f"dim-{dim}.part-1"


def _marker(root: Path, dim: int) -> Path:
    return root / f"dim-{dim}.parts.json"


def read_state(root: Path, dim: int) -> str | None:
    try:
        return str(json.loads(_marker(root, dim).read_text())["state"])
    except FileNotFoundError:
        return None


def _write_state(root: Path, dim: int, state: str) -> None:
    # Written aside, synced, then renamed over the marker: a crash leaves the old state or the new, never half.
    target = _marker(root, dim)
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w") as f:
        json.dump({"state": state, "parts": 2, "hash": "blake2b(uuid)[0] & 1"}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)


def discard(root: Path, dim: int) -> None:
    """Forget a split when part 0 was moved aside as damaged: its part 1 would otherwise join the rebuilt store."""
    if part_dir(root, dim).exists():
        move_aside(part_dir(root, dim))
    _marker(root, dim).unlink(missing_ok=True)


def _ids_of_part_1(shard: Any, qe: Any) -> list[Any]:
    out: list[Any] = []
    offset = None
    while True:
        recs, offset = shard.scroll(qe.ScrollRequest(limit=10_000, offset=offset, with_payload=False,
                                                     with_vector=False))
        out.extend(r.id for r in recs if part_of(r.id))
        if offset is None:
            return out


def split(main: PartStore, opener: Opener, crash_after: str | None = None) -> Parts | None:
    """Move the points hashed to part 1 out of `main` into a new part-1 shard, in the crash-safe order above.

    `crash_after` ("copying", "copied") stops half way, as a crash would, for the recovery tests: it returns None
    and the store must then be closed and reopened.
    """
    qe, root, dim = main._qe, main.root, main.dim
    if part_dir(root, dim).exists():  # a copy a crash interrupted (no "copied" marker)
        shutil.rmtree(part_dir(root, dim))
    part = main.open_part(create=True)
    moved = _ids_of_part_1(main._shard, qe)
    for i in range(0, len(moved), BATCH):
        # Every point moves, the eval's and anyone else's, so a point's part always follows from its id. The
        # vectors come back as stored (normalised float32), so the copy scores bit-identically.
        recs = main._shard.retrieve(moved[i : i + BATCH], with_payload=True, with_vector=True)
        part._shard.update(qe.UpdateOperation.upsert_points([qe.Point(r.id, r.vector, r.payload) for r in recs]))
        if crash_after == "copying":
            part.close()
            return None
    part._shard.flush()
    _write_state(root, dim, COPIED)
    if crash_after == "copied":
        part.close()
        return None
    _finish(main, moved)
    return Parts(main, opener, part)


def _finish(main: PartStore, moved: list[Any] | None = None) -> None:
    qe = main._qe
    ids = _ids_of_part_1(main._shard, qe) if moved is None else moved
    for i in range(0, len(ids), BATCH):
        main._shard.update(qe.UpdateOperation.delete_points(ids[i : i + BATCH]))
    main._shard.flush()
    _write_state(main.root, main.dim, SPLIT)


def reopen(main: PartStore, opener: Opener) -> Parts | None:
    """The parts of a store just opened, after recovering from a split a crash interrupted; None if not split."""
    state = read_state(main.root, main.dim)
    if state is None:
        if part_dir(main.root, main.dim).exists():
            shutil.rmtree(part_dir(main.root, main.dim))
        return None
    if state == COPIED:
        _finish(main)
    return Parts(main, opener)


def merge(results: list[list[Hit]], limit: int) -> list[Hit]:
    """The parts' top hits as one list: score descending, equal scores by point id (a fixed rule, where one
    shard's order among equal scores is the engine's own); each part's top `limit` holds its share of the
    overall top `limit`, so the cut is exact."""
    return sorted((h for hits in results for h in hits), key=lambda h: (-h.score, h.point_id))[:limit]


class Parts:
    """Part 1 of a split store: open in this process (`here`) or searched by the worker."""

    def __init__(self, main: PartStore, opener: Opener, local: PartStore | None = None) -> None:
        self._main = main
        self._opener = opener
        self._local = local
        self._worker: _Worker | None = None

    def here(self) -> PartStore:
        """Part 1 open in this process, the worker stopped first: a shard directory admits one process."""
        self._stop_worker()
        if self._local is None:
            self._local = self._main.open_part()
        return self._local

    def start(self) -> None:
        """Hand part 1 to a worker (which builds any missing int8 copies on load) unless one already has it."""
        if self._worker is not None:
            return
        if self._local is not None:
            self._local.close()
            self._local = None
        m = self._main
        self._worker = _Worker(part_dir(m.root, m.dim), self._opener, (str(m.root), m.dim, m.tag_key, m.tag))

    def wait_ready(self) -> None:
        self.start()
        self._call(lambda w: w.wait_ready())

    @property
    def worker_pid(self) -> int | None:
        return None if self._worker is None else self._worker.pid

    def search(self, vector: np.ndarray, limit: int, threshold: float | None, fingerprint: str | None,
               exact: bool) -> list[Hit]:
        """Part 1 searched by the worker while this process searches part 0; the two merged."""
        self.start()
        m = self._main
        self._call(lambda w: w.ask((vector, limit, threshold, fingerprint, exact, m._always_filter)))
        try:
            mine = m._search_here(vector, limit, threshold, fingerprint, exact)
        finally:  # the answer is read even if this side failed, so the next request gets its own answer
            theirs = self._call(lambda w: w.answer())
        return merge([mine, theirs], limit)

    def _call(self, fn: Any) -> Any:
        assert self._worker is not None
        try:
            return fn(self._worker)
        except NomadError:
            self._worker.kill()
            self._worker = None
            raise

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def close(self) -> None:
        self._stop_worker()
        if self._local is not None:
            self._local.close()
            self._local = None


class _Worker:
    def __init__(self, where: Path, opener: Opener, args: tuple[str, int, str, str]) -> None:
        # spawn, never fork: the parent may run torch or other threads, which a forked child inherits broken.
        ctx = mp.get_context("spawn")
        self._dir = where
        self._conn, child = ctx.Pipe()
        # daemon: ended when the parent exits normally; if the parent is killed the pipe closes and the worker
        # closes its shard and exits (serve's EOFError).
        self._proc = ctx.Process(target=serve, args=(child, opener, args), daemon=True,
                                 name=f"nomad-eval search worker {self._dir.name}")
        self._proc.start()
        child.close()  # only the worker holds its end, so the worker's exit reads as EOF here
        self._ready = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def wait_ready(self) -> None:
        if not self._ready:
            self._receive(READY_TIMEOUT_S)
            self._ready = True

    def ask(self, request: tuple[Any, ...]) -> None:
        self.wait_ready()
        try:
            self._conn.send(request)
        except OSError:  # the worker's end is closed: it died since its last answer
            raise self._died() from None

    def answer(self) -> list[Hit]:
        return [Hit(i, s, p) for i, s, p in self._receive(SEARCH_TIMEOUT_S)]

    def _receive(self, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        while not self._conn.poll(1.0):
            if not self._proc.is_alive():
                break  # fall through: a dead worker's pipe may still hold its last message, else EOF
            if time.monotonic() > deadline:
                raise NomadError(f"the search worker for {self._dir} did not answer within {timeout_s:.0f} s")
        try:
            kind, body = self._conn.recv()
        except (EOFError, OSError):
            raise self._died() from None
        if kind == "error":
            raise NomadError(f"the search worker for {self._dir} failed: {body}")
        return body

    def _died(self) -> NomadError:
        self._proc.join(5)
        return NomadError(f"the search worker for {self._dir} died (exit code {self._proc.exitcode}); the "
                          "store's files are left as they are, and the next search starts a new worker. A script "
                          "that searches a split store must keep its top-level code under `if __name__ == "
                          "'__main__':`, since the worker is started with multiprocessing's spawn, which imports "
                          "the script again")

    def stop(self) -> None:
        """Let the worker close its shard and exit; only a worker that does not is killed."""
        try:
            self._conn.send(None)
        except (OSError, ValueError):
            pass  # already gone
        self._proc.join(60)
        self.kill()

    def kill(self) -> None:
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(10)
        self._conn.close()


def serve(conn: Connection, opener: Opener, args: tuple[str, int, str, str]) -> None:
    """The worker: opens part 1 (`opener(*args)`), builds its int8 copies if missing, then answers searches until
    told to stop."""
    try:
        store = opener(*args)
        store.prepare_search()
    except Exception as exc:  # reported to the parent, which raises it as a NomadError
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    try:
        conn.send(("ready", None))
        while True:
            try:
                request = conn.recv()
            except EOFError:  # the parent is gone
                return
            if request is None:
                return
            vector, limit, threshold, fingerprint, exact, always_filter = request
            try:
                store._always_filter = always_filter
                hits = store._search_here(vector, limit, threshold, fingerprint, exact)
                conn.send(("ok", [(h.point_id, h.score, h.payload) for h in hits]))
            except Exception as exc:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        store.close()
