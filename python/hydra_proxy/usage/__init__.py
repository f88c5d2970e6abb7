"""Usage accounting: per-request records, prices, a durable ledger, metrics, traces, a page.

The server's entry point is :class:`~.service.UsageService` (see its module docstring);
``docs/USAGE.md`` describes the record, the backends and the metrics.
"""

from __future__ import annotations

from .record import PROTOCOLS, ProtocolName, Tokens, UsageRecord, client_key_id

__all__ = ["PROTOCOLS", "ProtocolName", "Tokens", "UsageRecord", "client_key_id"]
