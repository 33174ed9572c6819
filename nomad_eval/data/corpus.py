"""Documents: a folder of markdown files, each file one document whose id is its stem."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nomad_eval.base.errors import Defect, InvalidInput


@dataclass(frozen=True)
class Document:
    doc_id: str
    path: str
    text: str
    title: str = ""
    distractor: bool = False  # added only to compete for the top ranks; never a golden's answer


def _title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


# A markdown document above this is almost surely not prose meant for retrieval (a log, a dump, a wrong folder):
# reading it whole would hold it in memory and embed thousands of chunks before anyone noticed.
MAX_DOCUMENT_BYTES = 10 * 2**20


def _read_document(path: Path, max_bytes: int) -> str | Defect:
    """The document's text, or the defect that keeps it out of the corpus."""
    name = str(path)
    try:
        if not path.is_file():
            return Defect(name, None, "not a regular file (a folder or a broken link named *.md)")
        size = path.stat().st_size
        if size > max_bytes:
            return Defect(name, None, f"{size:,} bytes, above the {max_bytes:,}-byte limit for one document "
                                      "(split it into several documents)")
        raw = path.read_bytes()
    except OSError as exc:
        return Defect(name, None, f"cannot read: {exc.strerror or exc}")
    if b"\x00" in raw:
        return Defect(name, None, "binary file (contains NUL bytes)")
    try:
        # utf-8-sig: a byte-order mark is not text, and would hide a first-line `# Title`.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Defect(name, line, f"not UTF-8 (byte {raw[exc.start]:#04x})")
    if not text.strip():
        return Defect(name, None, "empty document")
    return text


def _link_outside(folder: Path, rel: Path) -> Defect | None:
    """The defect of a file reached through a link (to the file or to a folder on its way) that resolves outside
    `folder`, naming the link and its target; None when the file stays inside."""
    root = folder.resolve()
    if (folder / rel).resolve().is_relative_to(root):
        return None
    here = folder
    for part in rel.parts:
        here = here / part
        if here.is_symlink() and not here.resolve().is_relative_to(root):
            break
    return Defect(str(here), None, f"a link to {here.resolve()}, outside the corpus folder {folder}: refused, "
                                   "since its text would enter the store and the run's files "
                                   "(data.follow_links=true reads it)")


def load_markdown_dir(folder: Path, max_bytes: int = MAX_DOCUMENT_BYTES,
                      follow_links: bool = False) -> list[Document]:
    """All `*.md` in `folder` and its subfolders, sorted by path. A document's id is its path below the folder
    without `.md` (`radio/nvis` for `radio/nvis.md`; a top-level file keeps its bare name), so documents in
    subfolders are read rather than silently left out. Hidden folders (`.git`, `.obsidian`) are skipped.
    Unreadable, binary, empty or oversized files are defects, and so is a link leading out of the folder
    unless `follow_links`."""
    if not folder.is_dir():
        raise InvalidInput([Defect(str(folder), None, "corpus folder does not exist")])
    docs: list[Document] = []
    defects: list[Defect] = []
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts[:-1]):
            continue
        outside = None if follow_links else _link_outside(folder, rel)
        text = outside or _read_document(path, max_bytes)
        if isinstance(text, Defect):
            defects.append(text)
            continue
        doc_id = rel.with_suffix("").as_posix()
        docs.append(Document(doc_id, str(path), text, _title(text, path.stem)))
    if defects:
        raise InvalidInput(defects)
    if not docs:
        raise InvalidInput([Defect(str(folder), None, "no *.md documents in the corpus folder")])
    return docs


def load_markdown_dirs(folders: list[Path], max_bytes: int = MAX_DOCUMENT_BYTES,
                       follow_links: bool = False) -> list[Document]:
    """The documents of several folders as one corpus (a base corpus plus, say, an attack's planted documents).
    One id in two folders is a defect: the second would silently shadow the first in every lookup."""
    docs: list[Document] = []
    seen: dict[str, str] = {}
    defects: list[Defect] = []
    for folder in folders:
        for doc in load_markdown_dir(folder, max_bytes, follow_links):
            if doc.doc_id in seen:
                defects.append(Defect(doc.path, None, f"document id {doc.doc_id!r} is also {seen[doc.doc_id]}"))
            seen.setdefault(doc.doc_id, doc.path)
            docs.append(doc)
    if defects:
        raise InvalidInput(defects)
    return docs  # folder by folder: a base corpus's documents keep their order and come first
