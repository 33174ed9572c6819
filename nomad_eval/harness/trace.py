"""Retrieval spans: every retrieval recorded in trace.jsonl with OpenTelemetry GenAI field names.

Span name and `gen_ai.operation.name` are "retrieval", kind INTERNAL, documents as
`gen_ai.retrieval.documents` ([{id, score}, ...]); harness-specific detail lives under `nomad_eval.*`.
The same JSONL written by a user's own application can be turned into a draft suite (tier=dataset).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from nomad_eval.base.atomic import JsonValue, write_jsonl
from nomad_eval.rag.pipeline import RetrievedChunk


def _hex(n: int) -> str:
    return os.urandom(n).hex()


@dataclass
class SpanClock:
    start_ns: int = 0
    end_ns: int = 0


@contextmanager
def timed() -> Iterator[SpanClock]:
    clock = SpanClock(time.time_ns())
    yield clock
    clock.end_ns = time.time_ns()


class Span(TypedDict):
    """One line of trace.jsonl: an OpenTelemetry span, its attributes in the GenAI semantic conventions."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    status: dict[str, str]
    attributes: dict[str, JsonValue]


@dataclass
class Tracer:
    trace_id: str = field(default_factory=lambda: _hex(16))
    spans: list[Span] = field(default_factory=list)

    def retrieval(self, clock: SpanClock, query: str, chunks: list[RetrievedChunk], top_k: int | None,
                  data_source: str, golden_id: str | None = None, rewritten: str | None = None,
                  timings: dict[str, float] | None = None, messages: list[dict[str, str]] | None = None) -> None:
        attrs: dict[str, JsonValue] = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": data_source,
            "gen_ai.retrieval.query.text": query,
            "gen_ai.retrieval.documents": [
                {"id": c.chunk_id, "score": c.final_score, "doc_id": c.doc_id, "raw_score": c.score,
                 "rank": c.rank, "content": c.text}
                for c in chunks
            ],
        }
        if top_k is not None:
            attrs["gen_ai.request.top_k"] = top_k
        if golden_id is not None:
            attrs["nomad_eval.golden.id"] = golden_id
        if rewritten is not None:
            attrs["nomad_eval.query.rewritten"] = rewritten
        if messages is not None:
            # The conversation as asked (history, then the question), so a draft golden made from this trace
            # keeps its turns: the retrieval query alone is the glossary-expanded or rewritten text.
            attrs["gen_ai.input.messages"] = [{"role": m["role"], "content": m["content"]} for m in messages]
        for k, v in (timings or {}).items():
            attrs[f"nomad_eval.duration.{k}_s"] = v
        self.spans.append(Span(
            trace_id=self.trace_id, span_id=_hex(8), parent_span_id=None, name="retrieval",
            kind="INTERNAL", start_time_unix_nano=clock.start_ns, end_time_unix_nano=clock.end_ns,
            status={"code": "OK"}, attributes=attrs,
        ))

    def write(self, path: Path, otlp_endpoint: str | None = None, otlp_timeout_s: float = 10.0) -> str | None:
        """Write trace.jsonl; with an endpoint, also export. Returns a warning when the export failed."""
        write_jsonl(path, self.spans)
        if otlp_endpoint and self.spans:
            return export_otlp(self.spans, otlp_endpoint, otlp_timeout_s)
        return None


def export_otlp(spans: list[Span], endpoint: str, timeout_s: float = 10.0) -> str | None:
    """Send the spans of trace.jsonl over OTLP/HTTP (protobuf) with the same trace and span ids.

    Needs the optional `otel` extra. A collector that is down or refuses the spans costs a warning, not the run:
    trace.jsonl already holds every span, and the measurement must not depend on a side channel.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.trace.export import SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
    except ImportError as exc:
        from nomad_eval.base.errors import NomadError

        raise NomadError("trace.otlp_endpoint is set but OpenTelemetry is not installed: "
                         "pip install 'nomad-eval[otel]'") from exc

    resource, scope = Resource.create({"service.name": "nomad-eval"}), InstrumentationScope("nomad_eval")

    def readable(s: Span) -> ReadableSpan:
        # The span of trace.jsonl, ids included, so a collector's view can be joined to the run. OTLP attribute
        # values are scalars or flat lists of scalars: the document list travels as JSON text.
        ids = SpanContext(int(s["trace_id"], 16), int(s["span_id"], 16), False, TraceFlags(TraceFlags.SAMPLED))
        return ReadableSpan(
            s["name"], ids, resource=resource, instrumentation_scope=scope, kind=SpanKind.INTERNAL,
            attributes={k: (json.dumps(v) if isinstance(v, list | dict) else v) for k, v in s["attributes"].items()},
            status=Status(StatusCode.OK if s["status"]["code"] == "OK" else StatusCode.ERROR),
            start_time=s["start_time_unix_nano"], end_time=s["end_time_unix_nano"])

    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout_s)
    try:
        result = exporter.export([readable(s) for s in spans])
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    if result != SpanExportResult.SUCCESS:
        return (f"OTLP export to {endpoint} failed: the collector did not accept {len(spans)} span(s) within "
                f"{timeout_s:g} s; trace.jsonl holds them all")
    return None
