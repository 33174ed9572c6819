"""A user's RAG app as a small HTTP service on loopback: POST {query, history} -> {answer, contexts, usage}.

It stands in for the app under evaluation, so it is scripted: each known question has its answer and the
documents it retrieves. Plantable faults, as a deploy could bring them: `drop_contexts` (retrieval returns
nothing, so the app declines), `wrong_topic` (questions about one document answered wrongly), `fail_first`
(the first N requests answer 503), `delay` (seconds before each answer), `broken` (a null answer, or a 200
carrying an error). `requests` counts what reached it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers._http import JsonHandler, running

DECLINE = "I do not have that information."


@dataclass
class Script:
    answers: dict[str, tuple[str, list[str]]]  # query -> (answer, retrieved doc ids)
    corpus: dict[str, str]                     # doc id -> text
    needs_history: dict[str, str] = field(default_factory=dict)  # query -> a word the history must hold
    drop_contexts: bool = False
    wrong_topic: str | None = None
    fail_first: int = 0
    delay: float = 0.0
    broken: str | None = None                  # "null": a null answer; "error": a 200 carrying {"error": ...}
    served: dict[str, list[str]] = field(default_factory=dict)  # doc id -> the passages served for it (an old index)
    foreign: tuple[str, str] | None = None     # (doc id, text): a passage of no document, served beside that one's
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    in_flight: int = 0
    peak: int = 0                              # the most requests answered at once
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.broken == "error":
            return {"error": "the index is being rebuilt"}
        query = str(body.get("query"))
        answer, docs = self.answers.get(query, (DECLINE, []))
        word = self.needs_history.get(query)
        if word and word not in " ".join(m["content"] for m in body.get("history") or []):
            answer, docs = DECLINE, []
        if self.drop_contexts:
            answer, docs = DECLINE, []
        if self.wrong_topic and self.wrong_topic in docs:
            answer = "About half an hour, I believe."
        contexts = [{"doc_id": d, "text": t} for d in docs for t in self.served.get(d, [self.corpus[d]])]
        if self.foreign is not None and self.foreign[0] in docs:
            contexts.append({"doc_id": None, "text": self.foreign[1]})
        return {"result": {"answer": None if self.broken == "null" else answer},
                "contexts": contexts,
                "usage": {"prompt_tokens": 100 + len(query), "completion_tokens": len(answer) // 4}}


def script_for(goldens: Path, corpus: Path) -> Script:
    """Right answers for every golden of a suite: its mustInclude patterns' first alternatives, its documents."""
    import json

    docs = {p.stem: p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*.md"))}
    answers: dict[str, tuple[str, list[str]]] = {}
    needs: dict[str, str] = {}
    for line in goldens.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        g = json.loads(line)
        if g.get("expectRefusal"):
            continue
        said = " and ".join(p.split("|")[0] for p in g.get("mustInclude") or [])
        answers[g["query"]] = (f"It is {said}.", list(g["relevantDocIds"]))
        if g.get("turns"):
            needs[g["query"]] = g["turns"][0]["content"].split()[3]  # a word from the first turn
    return Script(answers, docs, needs)


@contextmanager
def serve(script: Script) -> Iterator[str]:
    import time

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = self._body()
            script.requests.append(body)
            script.headers.append(dict(self.headers))
            if len(script.requests) <= script.fail_first:
                self._send(503, {"error": "warming up"})
                return
            with script.lock:
                script.in_flight += 1
                script.peak = max(script.peak, script.in_flight)
            time.sleep(script.delay)
            with script.lock:
                script.in_flight -= 1
            self._send(200, script.reply(body))

    with running(Handler) as url:
        yield f"{url}/ask"
