"""Answers that carry markdown formatting: upstream NOMAD's `markdownRate`, 1/0 per answer.

An answer counts as formatted when it holds any of these CommonMark constructs (lines may be indented by up to
three spaces, as CommonMark allows):

- `heading`: an ATX heading, `#` to `######` then a space and text (`## Steps`);
- `bullet list`: a line starting with `-`, `*` or `+`, a space, then text (`- boil the water`);
- `numbered list`: a line starting with a number, `.` or `)`, a space, then text (`1. boil the water`);
- `bold`: `**text**` or `__text__` with no space just inside the markers;
- `italics`: `*text*` or `_text_` not inside a word (`snake_case_name` and `2 * 3 * 4` do not count);
- `code`: a fence line (three backticks or tildes) or inline code between single backticks;
- `table`: a delimiter row such as `|---|:---:|` (pipes, dashes, colons; at least one pipe and three dashes);
- `link`: `[text](target)`.

Plain prose, a hyphenated word, an arithmetic `*` or a lone `#` in text ("room #4") do not count.
"""

from __future__ import annotations

import re

from nomad_eval.metrics.registry import MetricSpec, register

SPEC = register(MetricSpec(
    "markdownRate",
    "share of answers holding markdown formatting (heading, list, bold/italics, code, table or link)",
    # Upstream's harness reads a rise as better (NOMAD's chat renders markdown); a gate naming it here agrees.
    direction="higher", tier="generation", binary=True,
))

_M = re.MULTILINE
FEATURES: dict[str, re.Pattern[str]] = {
    "heading": re.compile(r"^ {0,3}#{1,6}[ \t]+\S", _M),
    "bullet list": re.compile(r"^ {0,3}[-*+][ \t]+\S", _M),
    "numbered list": re.compile(r"^ {0,3}\d{1,9}[.)][ \t]+\S", _M),
    "bold": re.compile(r"\*\*(?=\S)[^*\n]*?\S\*\*|(?<!\w)__(?=\S)[^_\n]*?\S__(?!\w)"),
    "italics": re.compile(r"(?<![\w*])\*(?=[^\s*])[^*\n]*?[^\s*]\*(?![\w*])"
                          r"|(?<![\w_])_(?=[^\s_])[^_\n]*?[^\s_]_(?![\w_])"),
    "code": re.compile(r"^ {0,3}(?:`{3,}|~{3,})|`[^`\n]+`", _M),
    "table": re.compile(r"^(?=[^\n]*\|)(?=[^\n]*-{3})[ \t|:-]+$", _M),
    "link": re.compile(r"\[[^\]\n]+\]\([^)\s]+\)"),
}


def markdown_features(answer: str) -> list[str]:
    """The kinds of formatting found in `answer`, in FEATURES order (empty: plain text)."""
    return [name for name, pattern in FEATURES.items() if pattern.search(answer)]


def has_markdown(answer: str) -> bool:
    return any(pattern.search(answer) for pattern in FEATURES.values())
