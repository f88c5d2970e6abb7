"""OpenTelemetry spans in the GenAI semantic conventions (SDK in-memory exporter)."""

from __future__ import annotations

import pytest

from hydra_proxy.usage.tracing import Tracing, setup_tracing
from support.usage_data import make_records

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (extra 'otel')")
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode


def test_a_span_per_request_with_genai_attributes() -> None:
    exporter = InMemorySpanExporter()
    tracing = setup_tracing(exporter=exporter)
    assert tracing.enabled
    ok, failed = make_records(2, 41)
    ok = ok._replace(status=200, error_type=None, cache_read_tokens=7)
    failed = failed._replace(status=429, error_type="rate_limit_error")
    tracing.span(ok, finish_reasons=["end_turn"])
    tracing.span(failed)
    tracing.close()
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    span = spans[0]
    assert span.name == f"chat {ok.requested_model}" and span.kind is SpanKind.CLIENT
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.system"] == ok.provider
    assert attrs["gen_ai.request.model"] == ok.requested_model
    assert attrs["gen_ai.response.model"] == ok.target_model
    assert attrs["gen_ai.usage.input_tokens"] == ok.input_tokens + 7 + ok.cache_write_tokens
    assert attrs["gen_ai.usage.output_tokens"] == ok.output_tokens
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert span.start_time == int(ok.time * 1e9)
    assert span.end_time == span.start_time + int(ok.latency_ms * 1e6)
    assert span.status.status_code is StatusCode.UNSET
    bad = spans[1]
    assert dict(bad.attributes or {})["error.type"] == "rate_limit_error"
    assert bad.status.status_code is StatusCode.ERROR


def test_disabled_is_a_no_op() -> None:
    tracing = setup_tracing(enabled=False)
    assert not tracing.enabled
    tracing.span(make_records(1, 42)[0])  # nothing to export, nothing raised
    tracing.close()
    assert not Tracing().enabled
