"""OpenTelemetry traces: host request -> upstream -> policy, exported over OTLP/HTTP when configured.

Off unless `tracing.otlp_endpoint` is set (or a test installs an exporter): then
every helper here is a check of one module global and returns at once, no SDK
object is created and no header is added upstream.

Spans (names and attributes are documented in docs/logs-and-metrics.md):
- `mcpgw.host_request`: one POST from a host; continues the host's W3C `traceparent`.
- `mcpgw.upstream`: one exchange with the upstream server; its context goes upstream
  as `traceparent` (W3C trace context).
- `mcpgw.policy`: one elicitation decision, with the rule ids that fired.
No span carries a session id, a user or any field value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

    from gateway.config import TracingConfig

_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def enabled() -> bool:
    return _tracer is not None


def configure(cfg: TracingConfig | None, exporter: SpanExporter | None = None) -> bool:
    """Start tracing when `cfg.otlp_endpoint` is set or an exporter is given (tests). True when on."""
    global _tracer, _provider
    shutdown()
    endpoint = cfg.otlp_endpoint if cfg is not None else None
    if endpoint is None and exporter is None:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    ratio = cfg.sample_ratio if cfg is not None else 1.0
    service = cfg.service_name if cfg is not None else "elicitation-gateway"
    provider = TracerProvider(
        resource=Resource.create({"service.name": service}), sampler=ParentBased(TraceIdRatioBased(ratio))
    )
    processor: SpanProcessor
    if exporter is not None:
        processor = SimpleSpanProcessor(exporter)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        assert cfg is not None
        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, headers=dict(cfg.headers), timeout=5))
    provider.add_span_processor(processor)
    _provider, _tracer = provider, provider.get_tracer("gateway")
    return True


def shutdown() -> None:
    """Flush what is buffered and stop exporting."""
    global _tracer, _provider
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


_OFF: Final = contextlib.nullcontext()


def span(name: str, parent_headers: Mapping[str, str] | None = None,
         **attributes: Any) -> contextlib.AbstractContextManager[Span | None]:
    """A current span (None when tracing is off); `parent_headers` continue a caller's W3C trace."""
    if _tracer is None:
        return _OFF  # every request passes here: no generator when there is nothing to record
    return _span(name, parent_headers, attributes)


@contextlib.contextmanager
def _span(name: str, parent_headers: Mapping[str, str] | None, attributes: dict[str, Any]) -> Iterator[Span | None]:
    assert _tracer is not None
    context = None
    if parent_headers is not None and "traceparent" in {k.lower() for k in parent_headers}:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        context = TraceContextTextMapPropagator().extract(
            {k.lower(): v for k, v in parent_headers.items()})
    with _tracer.start_as_current_span(name, context=context, attributes=_clean(attributes)) as current:
        yield current


def annotate(**attributes: Any) -> None:
    """Attributes on the current span, if tracing is on."""
    if _tracer is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(_clean(attributes))


def inject(headers: MutableMapping[str, str]) -> None:
    """Add `traceparent` (and `tracestate`) of the current span to an outgoing request's headers."""
    if _tracer is None:
        return
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    TraceContextTextMapPropagator().inject(headers)


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        out[f"mcpgw.{key}"] = list(value) if isinstance(value, tuple | list) else value
    return out
