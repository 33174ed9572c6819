"""OTLP export: the spans of trace.jsonl reach a collector with the same ids; a dead one costs a warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import MINI, run_in_process
from tests.servers.otlp_collector import collector

pytestmark = pytest.mark.slow  # retrieval runs exporting to a collector


def _attrs(span: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for kv in span.attributes:  # type: ignore[attr-defined]
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value"))
    return out


def test_retrieval_spans_reach_a_collector_with_their_ids(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    with collector() as (endpoint, received):
        assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                              "quiet=true", f"trace.otlp_endpoint={endpoint}") == 0
    spans = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    assert len(received) == len(spans) == 8
    for sent, got in zip(spans, received, strict=True):
        assert got.trace_id.hex() == sent["trace_id"] and got.span_id.hex() == sent["span_id"]
        assert got.name == "retrieval"
        assert (got.start_time_unix_nano, got.end_time_unix_nano) == (sent["start_time_unix_nano"],
                                                                      sent["end_time_unix_nano"])
        attrs = _attrs(got)
        assert attrs["nomad_eval.golden.id"] == sent["attributes"]["nomad_eval.golden.id"]
        docs = json.loads(str(attrs["gen_ai.retrieval.documents"]))
        assert docs == sent["attributes"]["gen_ai.retrieval.documents"]
    assert json.loads((run / "report.json").read_text())["warnings"] == []


def test_a_collector_that_refuses_costs_a_warning_not_the_run(tmp_path: Path, data_dir: Path) -> None:
    run = tmp_path / "run"
    with collector(status=400) as (endpoint, received):  # 400 is not retried: the refusal is immediate
        assert run_in_process("tier=retrieval", *MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}",
                              "quiet=true", f"trace.otlp_endpoint={endpoint}", "trace.otlp_timeout_s=2") == 0
    assert received == []
    warnings = json.loads((run / "report.json").read_text())["warnings"]
    assert [w for w in warnings if w.startswith(f"OTLP export to {endpoint} failed") and "8 span(s)" in w]
    assert len((run / "trace.jsonl").read_text().splitlines()) == 8
