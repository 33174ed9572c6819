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


def load_markdown_dir(folder: Path) -> list[Document]:
    """All `*.md` directly in `folder`, sorted by id. Unreadable or empty files are defects."""
    if not folder.is_dir():
        raise InvalidInput([Defect(str(folder), None, "corpus folder does not exist")])
    docs: list[Document] = []
    defects: list[Defect] = []
    for path in sorted(folder.glob("*.md")):
        raw = path.read_bytes()
        if b"\x00" in raw:
            defects.append(Defect(str(path), None, "binary file (contains NUL bytes)"))
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            defects.append(Defect(str(path), line, f"not UTF-8 (byte {raw[exc.start]:#04x})"))
            continue
        if not text.strip():
            defects.append(Defect(str(path), None, "empty document"))
            continue
        docs.append(Document(path.stem, str(path), text, _title(text, path.stem)))
    if defects:
        raise InvalidInput(defects)
    if not docs:
        raise InvalidInput([Defect(str(folder), None, "no *.md documents in the corpus folder")])
    return docs
