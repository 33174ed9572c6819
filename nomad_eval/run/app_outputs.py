"""What an app answered (tier=app): its outputs read from a file (app=answers) or asked of its HTTP endpoint
(app=http) in the app's concurrency, behind the app response cache, each question's repeats in order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from pydantic import JsonValue

from nomad_eval.backends.http_app import AppReply, HttpApp
from nomad_eval.backends.response_cache import AppResponseCache
from nomad_eval.base.console import err_console, map_in_order
from nomad_eval.base.errors import NomadError
from nomad_eval.config import RunConfig
from nomad_eval.data.answers import AppOutput, load_answers, repeats_of
from nomad_eval.data.golden import Golden
from nomad_eval.harness.rundir import run_dir
from nomad_eval.run.app_checks import request_settings, unread_contexts

KINDS = ("answers", "http")  # app=answers reads a file, app=http asks the endpoint


APP_CACHE = "app_responses.sqlite"  # in paths.data_dir


CACHED_LABELS = MappingProxyType({"resumed": "kept from this run before it was interrupted (resume=true)",
                                  "cache": "read from the response cache (cache=true), not asked of the app"})


DEFECTS_FILE = "app_outputs_defects.txt"  # every defect of app.file, when there are more than an error lists


@dataclass
class Outputs:
    """Every (golden id, repeat)'s record, the repeats per golden, and what the calls cost."""

    records: dict[tuple[str, int], AppOutput]
    repeats: int
    calls: int = 0
    cache_hits: int = 0
    cached: dict[tuple[str, int], str] = field(default_factory=dict)  # (id, repeat) -> "resumed" or "cache"
    unread: str | None = None  # a passage list the responses hold that app.contexts_path does not read


def app_settings(config: RunConfig) -> dict[str, JsonValue]:
    """The `app` group as plain values; a run without one is told which to choose."""
    if config.app is None:
        raise NomadError("tier=app needs the app's outputs: app=answers app.file=<outputs.jsonl>, or app=http "
                         "app.url=<endpoint> (docs/app.md)", 2)
    settings = config.app.spec()
    if settings.get("kind") not in KINDS:
        raise NomadError(f"app.kind={settings.get('kind')!r}: choose {' or '.join(KINDS)}", 2)
    return settings


def collect(config: RunConfig, data_dir: Path, suite: list[Golden], goldens: list[Golden], folder: Path) -> Outputs:
    settings = app_settings(config)
    if settings["kind"] == "answers":
        records = load_answers(Path(str(settings["file"])), suite, goldens, folder / DEFECTS_FILE)
        # Only the selected goldens' records (a file may answer the whole suite while tags/limit pick a few).
        wanted = {g.id for g in goldens}
        records = {k: v for k, v in records.items() if k[0] in wanted}
        return Outputs(records, repeats_of(records))
    app = HttpApp(**request_settings(settings))
    use = CacheUse(str(run_dir(config.paths.run_dir).resolve()), bool(config.resume), config.cache is True)
    if use.reuse:
        err_console.print(f"cache=true: answers of earlier runs are read from {data_dir / APP_CACHE}, so an app "
                          "redeployed at the same URL is not asked again for them (the default asks it every time)",
                          markup=False)
    cache = AppResponseCache(data_dir / APP_CACHE) if config.cache is not False else None
    try:
        # The app's own variation is unknown (it is the system under test), so a null `repeats` samples it.
        if str(config.repeats) == "auto":
            raise NomadError("repeats=auto: tier=generation only for now; tier=app takes repeats=N", 2)
        repeats = int(config.sample_repeats if config.repeats is None else config.repeats)
        out = ask_all(app, cache, use, goldens, max(1, repeats), bool(config.quiet))
    finally:
        app.close()
        if cache is not None:
            cache.close()
    if out.cached:
        sources = Counter(out.cached.values())
        err_console.print(f"app: {out.calls} answer(s) asked of the app, " + ", ".join(
            f"{n} {CACHED_LABELS[s]}" for s, n in sorted(sources.items())), markup=False)
    return out


@dataclass(frozen=True)
class CacheUse:
    """Which of the app's cached answers a run may read. A new run reads none: the app under test answers every
    golden and repeat. `resume`: this run's own answers (kept under its run folder) from before it was interrupted;
    `reuse` (an explicit cache=true): any earlier run's."""

    run: str
    resume: bool
    reuse: bool


def _cached(cache: AppResponseCache | None, use: CacheUse, app: HttpApp, g: Golden, keys: tuple[str, str]
            ) -> tuple[AppReply, str] | None:
    """The cached reply this run may use and where it came from; a row that no longer parses is asked again."""
    if cache is None:
        return None
    for source, key, allowed in (("resumed", keys[0], use.resume), ("cache", keys[1], use.reuse)):
        hit = cache.get(key) if allowed else None
        if hit is not None:
            try:
                return app.parse(hit[0], hit[1], g.id), source
            except NomadError:
                continue
    return None


def ask_all(app: HttpApp, cache: AppResponseCache | None, use: CacheUse, goldens: list[Golden], repeats: int,
            quiet: bool) -> Outputs:
    """Each golden asked `repeats` times, up to app.concurrency requests at once, within app.deadline. Only a
    response that parses into an answer is cached (a null answer or a 200 carrying an error is asked again)."""
    tasks = [(g, r) for g in goldens for r in range(repeats)]
    ident = app.identity()
    out = Outputs({}, repeats)
    app.open()

    def one(task: tuple[Golden, int]) -> tuple[AppOutput, str | None]:
        g, r = task
        req = app.request(g.id, g.final_query, g.history)
        keys = (req.key(ident, r, use.run), req.key(ident, r))
        hit = _cached(cache, use, app, g, keys)
        if hit is not None:
            return output(g.id, r, hit[0]), hit[1]
        response, latency = app.send(req)
        if (unread := unread_contexts(response, app.paths["contexts"])) is not None:
            out.unread = unread
        reply = app.parse(response, latency, g.id)
        if cache is not None:
            for key in keys:
                cache.put(key, response, latency)
        return output(g.id, r, reply), None

    for rec, source in map_in_order(one, tasks, app.concurrency, f"asking the app ({app.name})", quiet):
        out.records[(rec.id, rec.repeat)] = rec
        if source is not None:
            out.cached[(rec.id, rec.repeat)] = source
        out.cache_hits += source is not None
        out.calls += source is None
    return out


def output(golden_id: str, repeat: int, reply: AppReply) -> AppOutput:
    """The reply as a record of the outputs file (its wire names, so the file and the HTTP run read alike)."""
    contexts = None if reply.contexts is None else [
        {k: v for k, v in (("docId", d or None), ("text", t)) if v is not None} for d, t in reply.contexts]
    return AppOutput.model_validate({"id": golden_id, "answer": reply.answer, "contexts": contexts, "repeat": repeat,
                                     "latencyMs": reply.latency_ms, "promptTokens": reply.prompt_tokens,
                                     "completionTokens": reply.completion_tokens})
