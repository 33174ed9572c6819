"""Values that become parts of a path are checked first: a report, a baseline or a config is data, and a
fingerprint of `../../x` in one must not choose where a file is written."""

from __future__ import annotations

import re

from nomad_eval.base.errors import NomadError

# corpus_fingerprint (harness/runtime.py) is the first 16 hex digits of a sha256.
FINGERPRINT = re.compile(r"[0-9a-f]{16}")
# One path component: no separator, no leading dot (so never `.` or `..`), nothing a shell or Hydra quotes.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,254}")


def name_problem(kind: str, value: object) -> str | None:
    """Why `value` may not be used as the `kind` part of a path, or None when it may."""
    pattern, rule = (FINGERPRINT, "16 lowercase hex digits") if kind == "fingerprint" else \
        (SAFE_NAME, "letters, digits and . _ + @ - , not starting with a dot, at most 255 characters")
    if isinstance(value, str) and pattern.fullmatch(value):
        return None
    return f"{kind} {value!r} is not usable in a path (a {kind} is {rule})"


def require_safe(source: str, **parts: object) -> None:
    """Refuses (exit 2) when any named part is unsafe, naming `source` (the file or setting it came from)."""
    problems = [p for kind, value in parts.items() if value is not None
                and (p := name_problem(kind, value)) is not None]
    if problems:
        raise NomadError(f"{source}: " + "; ".join(problems) + "; refused", 2)
