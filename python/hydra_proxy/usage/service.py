"""What the server holds per worker: price table, ledger, metrics and tracing, in one place.

Startup (in each worker, after the fork; the main process called
:func:`~.metrics.setup_multiprocess_dir` first when it runs several workers)::

    usage = UsageService.start(ledger_url="sqlite:~/.hydra-proxy/usage.sqlite3",
                               pricing_overrides=config.get("pricing", {}),
                               known_models=..., known_routes=..., known_providers=...)

Per finished request, once, whatever its outcome::

    usage.finish(usage.make_record(request_id=..., protocol="anthropic", ..., tokens=tokens,
                                   key=presented_proxy_key))

(``make_record`` prices the tokens and turns the key into its id; a hand-built
``UsageRecord`` with ``cost_usd=usage.cost(target_model, tokens)`` is the same.) Streams
also call ``stream_opened``/``stream_closed`` around the relay (the open-streams gauge).

Shutdown: ``usage.close()`` (writes every queued record). Routes: ``GET /metrics`` ->
:meth:`metrics_response`; ``GET /dashboard...`` -> :meth:`dashboard` (in a thread: it reads
the ledger).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .backends import open_ledger
from .dashboard import dashboard_response
from .ledger import Ledger
from .metrics import Metrics, render
from .pricing import PriceTable, default_table
from .record import ProtocolName, Tokens, UsageRecord, client_key_id
from .tracing import Tracing, setup_tracing

__all__ = ["UsageService"]

log = logging.getLogger("hydra_proxy.usage")


class UsageService:
    def __init__(
        self,
        prices: PriceTable,
        ledger: Ledger | None,
        metrics: Metrics | None,
        tracing: Tracing | None = None,
    ) -> None:
        self.prices = prices
        self.ledger = ledger
        self.metrics = metrics
        self.tracing = tracing or Tracing()

    @classmethod
    def start(
        cls,
        *,
        ledger_url: str | None,
        pricing_overrides: Mapping[str, Mapping[str, Any]] | None = None,
        metrics: bool = True,
        tracing: bool = False,
        known_models: Iterable[str] = (),
        known_routes: Iterable[str] = (),
        known_providers: Iterable[str] = (),
        ledger_options: Mapping[str, Any] | None = None,
    ) -> UsageService:
        """Everything on (ledger_url None: no ledger). Raises LedgerError, PricingError."""
        prices = default_table()
        if pricing_overrides:
            prices = prices.with_overrides(pricing_overrides)
        meter = (
            Metrics(
                known_models=known_models,
                known_routes=known_routes,
                known_providers=known_providers,
                is_priced=lambda m: prices.lookup(m) is not None,
            )
            if metrics
            else None
        )
        options = dict(ledger_options or {})
        if meter is not None:
            options.setdefault("on_drop", meter.count_dropped)
        ledger = open_ledger(ledger_url, **options) if ledger_url else None
        if meter is not None:
            meter.start()
        return cls(prices, ledger, meter, setup_tracing(tracing))

    def cost(self, model: str, tokens: Tokens) -> float | None:
        return self.prices.cost(model, tokens)

    def make_record(
        self,
        *,
        time: float,
        request_id: str,
        protocol: ProtocolName,
        route: str,
        provider: str,
        requested_model: str,
        target_model: str,
        tokens: Tokens,
        estimated: bool = False,
        latency_ms: float,
        ttfb_ms: float | None,
        status: int,
        error_type: str | None = None,
        key: bytes | str | None = None,
        stream: bool = False,
        key_name: str | None = None,
        team: str | None = None,
        agent: str | None = None,
        refusal: str | None = None,
    ) -> UsageRecord:
        """A priced record; ``key`` (the presented proxy key) is kept only as its short id.

        Once per request, on its path: positional fields (a tuple), a cached price lookup,
        a cached key id.
        """
        price = self.prices.lookup(target_model)
        cost = None if price is None else price.cost(tokens)
        if refusal is not None:  # refused by the proxy: nothing was asked of a model
            cost = 0.0
        return UsageRecord(
            time,
            request_id,
            protocol,
            route,
            provider,
            requested_model,
            target_model,
            tokens.input,
            tokens.output,
            tokens.cache_read,
            tokens.cache_write,
            tokens.reasoning,
            estimated,
            cost,
            latency_ms,
            ttfb_ms,
            status,
            error_type,
            client_key_id(key),
            stream,
            key_name,
            team,
            agent,
            refusal,
        )

    def finish(self, rec: UsageRecord, finish_reasons: Sequence[str] = ()) -> None:
        """Count one finished request everywhere; cheap (two queue appends: the metrics
        and the ledger are written from their own threads), never blocks, never raises."""
        try:
            if self.metrics is not None:
                self.metrics.observe(rec)
            if self.ledger is not None:
                self.ledger.record(rec)
            if self.tracing.enabled:
                self.tracing.span(rec, finish_reasons)
        except Exception:  # accounting must never fail a request
            log.exception("usage accounting failed for request %s", rec.request_id)

    def stream_opened(self, route: str, provider: str) -> None:
        if self.metrics is not None:
            self.metrics.stream_opened(route, provider)

    def stream_closed(self, route: str, provider: str) -> None:
        if self.metrics is not None:
            self.metrics.stream_closed(route, provider)

    def metrics_response(self) -> tuple[int, str, bytes]:
        if self.metrics is None:
            return 404, "text/plain; charset=utf-8", b"metrics are off\n"
        content_type, body = render(self.metrics)
        return 200, content_type, body

    def dashboard(
        self, path: str, query: str, key_name: str | None = None
    ) -> tuple[int, str, bytes]:
        """The page; `key_name`: only that named key's requests."""
        if self.ledger is None:
            return 404, "text/plain; charset=utf-8", b"the usage ledger is off\n"
        return dashboard_response(path, query, self.ledger, key_name=key_name)

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()
        if self.metrics is not None:
            self.metrics.close()
        self.tracing.close()
