"""Writing results so that a reader never sees half a file (temporary file, fsync, rename), and reading JSONL back."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nomad_eval.base.errors import Defect, InvalidInput, NomadError

# A run folder's own records (base/runfolder.py): the manifest, written last; the failure record beside an earlier
# run; and the mark a run writing into the folder keeps, listing each result as it is written.
MANIFEST = "manifest.json"
FAILURE = "report.failed.json"
WRITING = ".incomplete"

# A JSON object as read from a file or an HTTP body (or a YAML mapping: the same shape), before it is turned into
# a typed record.
JsonObject = dict[str, Any]
# A value that is written as JSON as it is (an identity hashed into a key, a record field): typed all the way down.
JsonValue = str | int | float | bool | None | Sequence["JsonValue"] | Mapping[str, "JsonValue"]

# A full disk, a full quota, or a file size limit: the write cannot succeed until the user frees space.
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class NoSpace(NomadError):
    """A write that failed for lack of space: named by the folder and the file, exit 2 (the setup: no verdict)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        what = "no space left on" if exc.errno != errno.EFBIG else "file size limit reached in"
        super().__init__(f"{what} {path.parent} (writing {path.name}); free space there and run again", 2)


def no_space(path: Path, exc: BaseException) -> NoSpace | None:
    """The NoSpace error for `exc` when it is one of the full-disk errors, else None."""
    return NoSpace(path, exc) if isinstance(exc, OSError) and exc.errno in FULL else None


def not_writable(path: Path, exc: BaseException) -> NomadError | None:
    """A folder that cannot be written (a read-only project, another user's folder): named, exit 2, instead of
    a traceback; None for any other error."""
    if not isinstance(exc, OSError) or exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
        return None
    return NomadError(f"cannot write {path}: {exc.strerror} ({path.parent} is read-only or not writable by this "
                      "user); run from a writable folder or point the setting that names it elsewhere", 2)


def _note(path: Path, data: bytes) -> None:
    """In a folder a run is writing (it holds the mark), the file's size and hash as written go into the mark before
    the file takes its place: the manifest lists what this run wrote, not whatever is on disk when it seals."""
    mark = path.parent / WRITING
    if path.name.startswith(".") or path.name in (MANIFEST, FAILURE) or not mark.is_file():
        return
    entry = {"name": path.name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    with mark.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def write_atomic(path: Path, text: str | bytes) -> None:
    """`text` replaces `path` whole or not at all; a full disk leaves the old file and no temporary file."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise no_space(path, exc) or not_writable(path, exc) or exc from None
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are meant to be read by others
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _note(path, data)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if (full := no_space(path, exc)) is not None:
            raise full from None
        raise


def read_input(path: Path) -> bytes:
    """A file named as input, whole; anything but a regular file (a FIFO that would block forever, /dev/zero that
    never ends, a socket) is refused (exit 2) before a byte is read. OSError as open() raises it otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of waiting for a writer
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) \
                else "a socket"
            raise NomadError(f"{path}: {kind}, not a file; name a regular file", 2)
        return fh.read()


def write_jsonl(path: Path, rows: Iterable[Mapping[str, object]]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[JsonObject]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput([Defect(str(path), n, f"not valid JSON ({exc.msg})")]) from None
    return rows
