"""What an app run's answers say about the run itself: a body the app does not read (every answer the same, or
every one a refusal) or passages the app returns that the config does not read. Each is a warning by name, since
the numbers such a run reports (0.00 everywhere, or nothing measured) would pass for a measurement."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nomad_eval.records import AnswerCase

# Keys an app's response commonly holds its retrieved passages under, for the "returned but not read" check.
CONTEXT_KEYS = ("contexts", "context", "sources", "documents", "docs", "passages", "chunks", "citations",
                "references", "retrieved")


def request_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The HTTP client's settings from the `app` group: `body` as given, or `default_body` when it is null."""
    out = {k: v for k, v in settings.items() if k not in ("kind", "default_body")}
    if out.get("body") is None:
        out["body"] = settings["default_body"]
    return out


def unread_contexts(response: Any, contexts_path: str | None) -> str | None:
    """The key of a passage list the response holds while app.contexts_path is null; None otherwise."""
    if contexts_path is not None or not isinstance(response, Mapping):
        return None
    return next((k for k in CONTEXT_KEYS if isinstance(response.get(k), list) and response[k]), None)


def answer_warnings(cases: list[AnswerCase], body: Any, unread: str | None) -> list[str]:
    """Named warnings for answers that look like a misconfigured run rather than the app's quality."""
    out = []
    answers = [c.answer for c in cases]
    sent = "" if body is None else f" The body sent was {json.dumps(body)[:200]}: set app.body to the keys it reads, " \
        "e.g. app.body={question: \"{query}\"}"
    if len(answers) > 1 and len(set(answers)) == 1:
        out.append(f"identical answers: the app gave the same answer to all {len(answers)} requests "
                   f"({answers[0][:80]!r}); is it reading the question?{sent}")
    elif len(cases) > 1 and all(c.refused for c in cases) and not all(c.expect_refusal for c in cases):
        out.append(f"all refusals: the app declined all {len(cases)} requests, the answerable ones too; is it "
                   f"reading the question?{sent}")
    if unread is not None:
        out.append(f"contexts not read: the app's responses hold passages under {unread!r} but app.contexts_path is "
                   f"null, so the retrieval measures, groundedness and retrieval-miss causes are not measured; set "
                   f"app.contexts_path={unread}")
    return out
