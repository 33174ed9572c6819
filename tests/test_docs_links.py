"""Every relative link in README.md and docs/*.md leads to a file that exists, and to a heading that exists there.

Pages move and headings get renamed; a reader who follows a dead link loses the thread, so the docs are checked like
code. Anchors are compared with the ids GitHub gives headings.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)


def pages(repo: Path = REPO) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def prose(text: str) -> str:
    """The text without code blocks or inline code, where `[x](y)` is an example rather than a link."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped (backticks included), spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):  # a heading's inline code is part of its id
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")  # a repeated heading gets -1, -2, ...
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file of this repository
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.name}: {target} (no file {dest})")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{page.name}: {target} (no heading #{anchor} in {dest.name})")
    return broken


def test_every_relative_link_and_anchor_in_the_docs_resolves() -> None:
    checked = pages()
    assert len(checked) > 2  # the README and the docs folder were both found
    broken = [b for page in checked for b in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_a_missing_file_or_heading_is_reported_and_code_is_not_read_as_links(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# The `gate`: exit codes\n\n## Notes\n\n## Notes\n")
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n[ok](other.md#the-gate-exit-codes) [ok](other.md#notes-1) [ok](#top) "
                    "[web](https://example.org/x) `[example](nowhere.md)`\n\n```\n[example](nowhere.md)\n```\n\n"
                    "[gone](missing.md) [no heading](other.md#nothing) [self](#nothing-here)\n")
    assert broken_links(page) == [f"page.md: missing.md (no file {tmp_path / 'missing.md'})",
                                  "page.md: other.md#nothing (no heading #nothing in other.md)",
                                  "page.md: #nothing-here (no heading #nothing-here in page.md)"]
