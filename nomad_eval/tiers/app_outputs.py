"""Where an app run's outputs come from: a JSONL file the app wrote (`app=answers`), or its HTTP endpoint called
for each golden (`app=http`). Both give the same records, in the schema of nomad_eval/data/answers.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from nomad_eval.backends.http_app import AppReply, HttpApp
from nomad_eval.backends.response_cache import AppResponseCache
from nomad_eval.base.console import map_in_order
from nomad_eval.base.errors import NomadError
from nomad_eval.data.answers import AppOutput, load_answers, repeats_of
from nomad_eval.data.golden import Golden

KINDS = ("answers", "http")


@dataclass
class Outputs:
    """Every (golden id, repeat)'s record, the repeats per golden, and what the calls cost."""

    records: dict[tuple[str, int], AppOutput]
    repeats: int
    calls: int = 0
    cache_hits: int = 0


def app_settings(cfg: DictConfig) -> dict[str, Any]:
    """The `app` group as plain values; a run without one is told which to choose."""
    if cfg.get("app") is None:
        raise NomadError("tier=app needs the app's outputs: app=answers app.file=<outputs.jsonl>, or app=http "
                         "app.url=<endpoint> (docs/app.md)", 2)
    settings: dict[str, Any] = OmegaConf.to_container(cfg.app, resolve=True)  # type: ignore[assignment]
    if settings.get("kind") not in KINDS:
        raise NomadError(f"app.kind={settings.get('kind')!r}: choose {' or '.join(KINDS)}", 2)
    return settings


def collect(cfg: DictConfig, data_dir: Path, suite: list[Golden], goldens: list[Golden]) -> Outputs:
    settings = app_settings(cfg)
    if settings["kind"] == "answers":
        records = load_answers(Path(str(settings["file"])), suite, goldens)
        # Only the selected goldens' records (a file may answer the whole suite while tags/limit pick a few).
        wanted = {g.id for g in goldens}
        records = {k: v for k, v in records.items() if k[0] in wanted}
        return Outputs(records, repeats_of(records))
    app = HttpApp(**{k: v for k, v in settings.items() if k != "kind"})
    cache = AppResponseCache(data_dir / "app_responses.sqlite") if cfg.cache else None
    try:
        return ask_all(app, cache, goldens, max(1, int(cfg.repeats)), bool(cfg.quiet))
    finally:
        app.close()
        if cache is not None:
            cache.close()


def ask_all(app: HttpApp, cache: AppResponseCache | None, goldens: list[Golden], repeats: int, quiet: bool
            ) -> Outputs:
    """Each golden asked `repeats` times, up to app.concurrency requests at once, within app.deadline."""
    tasks = [(g, r) for g in goldens for r in range(repeats)]
    ident = app.identity()
    out = Outputs({}, repeats)
    app.open()

    def one(task: tuple[Golden, int]) -> tuple[AppOutput, bool]:
        g, r = task
        req = app.request(g.id, g.final_query, g.history)
        key = req.key(ident, r)
        hit = cache.get(key) if cache is not None else None
        response, latency = hit if hit is not None else app.send(req)
        if hit is None and cache is not None:
            cache.put(key, response, latency)
        return output(g.id, r, app.parse(response, latency, g.id)), hit is not None

    for rec, cached in map_in_order(one, tasks, app.concurrency, f"asking the app ({app.name})", quiet):
        out.records[(rec.id, rec.repeat)] = rec
        out.cache_hits += cached
        out.calls += not cached
    return out


def output(golden_id: str, repeat: int, reply: AppReply) -> AppOutput:
    """The reply as a record of the outputs file (its wire names, so the file and the HTTP run read alike)."""
    contexts = None if reply.contexts is None else [
        {k: v for k, v in (("docId", d or None), ("text", t)) if v is not None} for d, t in reply.contexts]
    return AppOutput.model_validate({"id": golden_id, "answer": reply.answer, "contexts": contexts, "repeat": repeat,
                                     "latencyMs": reply.latency_ms, "promptTokens": reply.prompt_tokens,
                                     "completionTokens": reply.completion_tokens})
