"""Optional OpenTelemetry traces: one span per finished request, GenAI semantic conventions.

Active only when the ``otel`` extra is installed (``opentelemetry-sdk``, and the OTLP/HTTP
exporter, configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables) and the server
asks for it; otherwise :func:`setup_tracing` returns a tracer whose :meth:`~Tracing.span`
does nothing. The span is written after the request, from its usage record, with the
request's real start and end times, so tracing adds no work while the request runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .record import UsageRecord

__all__ = ["Tracing", "setup_tracing"]

log = logging.getLogger("hydra_proxy.usage")

_OPERATION = {"anthropic": "chat", "chat": "chat", "responses": "chat", "gemini": "chat"}


class Tracing:
    """Writes spans to an OpenTelemetry tracer; a None tracer makes every call a no-op."""

    def __init__(self, tracer: Any = None, provider: Any = None) -> None:
        self.tracer = tracer
        self.provider = provider

    @property
    def enabled(self) -> bool:
        return self.tracer is not None

    def span(self, rec: UsageRecord, finish_reasons: Sequence[str] = ()) -> None:
        """One CLIENT span for this request (start and end from the record)."""
        if self.tracer is None:
            return
        from opentelemetry.trace import SpanKind, Status, StatusCode

        start_ns = int(rec.time * 1e9)
        operation = _OPERATION.get(rec.protocol, "chat")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.system": rec.provider,
            "gen_ai.provider.name": rec.provider,
            "gen_ai.request.model": rec.requested_model,
            "gen_ai.response.model": rec.target_model,
            "gen_ai.usage.input_tokens": rec.input_tokens
            + rec.cache_read_tokens
            + rec.cache_write_tokens,
            "gen_ai.usage.output_tokens": rec.output_tokens,
            "http.response.status_code": rec.status,
            "hydra.request_id": rec.request_id,
            "hydra.route": rec.route,
            "hydra.client_protocol": rec.protocol,
            "hydra.stream": rec.stream,
            "hydra.usage.estimated": rec.estimated,
            "hydra.usage.cache_read_tokens": rec.cache_read_tokens,
            "hydra.usage.cache_write_tokens": rec.cache_write_tokens,
        }
        if finish_reasons:
            attributes["gen_ai.response.finish_reasons"] = list(finish_reasons)
        if rec.cost_usd is not None:
            attributes["hydra.cost_usd"] = rec.cost_usd
        if rec.ttfb_ms is not None:
            attributes["hydra.ttfb_ms"] = rec.ttfb_ms
        if rec.error_type is not None:
            attributes["error.type"] = rec.error_type
        span = self.tracer.start_span(
            f"{operation} {rec.requested_model}",
            kind=SpanKind.CLIENT,
            start_time=start_ns,
            attributes=attributes,
        )
        if rec.is_error:
            span.set_status(Status(StatusCode.ERROR, rec.error_type or str(rec.status)))
        span.end(end_time=start_ns + int(rec.latency_ms * 1e6))

    def close(self) -> None:
        """Flush and stop the exporter (worker shutdown)."""
        if self.provider is not None:
            self.provider.shutdown()


def setup_tracing(
    enabled: bool = True, exporter: Any = None, service_name: str = "hydra-proxy"
) -> Tracing:
    """A tracer exporting through ``exporter`` (default: OTLP/HTTP), or a no-op one.

    No-op when ``enabled`` is False or the OpenTelemetry SDK (or, without ``exporter``, the
    OTLP exporter) is not installed: the latter is logged once, naming the missing package.
    """
    if not enabled:
        return Tracing()
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        log.warning(
            "tracing off: opentelemetry-sdk is not installed (pip install 'hydra-proxy[otel]')"
        )
        return Tracing()
    processor: Any
    if exporter is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "tracing off: opentelemetry-exporter-otlp-proto-http is not installed "
                "(pip install 'hydra-proxy[otel]')"
            )
            return Tracing()
        # Batched in the SDK's own thread: exporting never runs on the event loop.
        processor = BatchSpanProcessor(OTLPSpanExporter())
    else:
        processor = SimpleSpanProcessor(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(processor)
    return Tracing(provider.get_tracer("hydra_proxy.usage"), provider)
