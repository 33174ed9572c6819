"""An OTLP/HTTP trace receiver on loopback that decodes the protobuf body, as a collector would."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.servers._http import running


@contextmanager
def collector(status: int = 200) -> Iterator[tuple[str, list[Any]]]:
    """Yields (endpoint, received spans); answers every export with `status`."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    received: list[Any] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if status == 200:
                assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
                req = ExportTraceServiceRequest.FromString(body)
                received.extend(s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans)
            data = ExportTraceServiceResponse().SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with running(Handler) as url:
        yield f"{url}/v1/traces", received
