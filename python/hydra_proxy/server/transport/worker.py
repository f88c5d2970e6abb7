"""What one worker process serves its requests with, built once when it starts.

granian runs the app in each worker process: the key pools, the admission gates, the
upstream connections and the usage service are per process (N workers: N of each); with
several processes, the gates' slots and the keys' rests are counted in a shared store.
Every Exchange reaches them through `Exchange.worker`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...config import Settings, client_keys, key_pools
from ...config.keys import KeyPool
from ...config.routes import Route
from ...redaction import Redactor
from ...signing_key import load_signing_key
from ...team.service import TeamKeys
from ...transducers import Implementation, select
from ...usage.service import UsageService
from ..checks import browser_guard
from ..checks.admission import Admission, limits_of, local_gate
from ..pipeline.previous_turn import PreviousTurns
from ..pipeline.sessions import use_session_headers
from .http1 import H1Client
from .shutdown import Shutdown

if TYPE_CHECKING:
    from ...cluster import Cluster


@dataclass
class Worker:
    settings: Settings
    default_route: Route
    """The route of a request no configured route claims (the settings' target provider)."""
    impl: Implementation
    """The transducer implementation (native or pure Python)."""
    signing_key: bytes
    http: H1Client
    """The upstream connections, kept alive between requests."""
    pools: dict[str, KeyPool]
    """The providers' key pools (none in key-passthrough mode: each request brings its own)."""
    admission: Admission | None
    """The admission gates (None: no bound is set)."""
    shutdown: Shutdown
    redactor: Redactor
    """Every provider key, and key-like tokens, out of the error bodies the proxy writes."""
    proxy_keys: tuple[bytes, ...]
    """The keys a client must present (HYDRA_PROXY_KEYS; empty: none)."""
    browser: browser_guard.Policy
    """Which Host and Origin headers a request may carry (the web pages kept out)."""
    started: float
    usage: UsageService | None = None
    """The usage ledger, metrics and traces (set at startup; None: all off)."""
    team: TeamKeys | None = None
    """The named client keys (set at startup; None: the store holds none)."""
    cluster: Cluster | None = None
    """The store shared with the other workers and replicas (None: this process serves
    alone)."""
    turns: PreviousTurns = field(default_factory=PreviousTurns)
    """The sessions' recent requests, so a long session's next one parses only what is new
    (at most `Settings.session_reuse_bytes` of bodies)."""

    @classmethod
    def create(cls, settings: Settings) -> Worker:
        from ...cluster import Cluster

        cluster = Cluster.for_worker(settings)
        use_session_headers(settings.session_headers)
        limits = limits_of(settings)
        admission = Admission(limits, cluster.gate if cluster is not None else local_gate)
        providers = settings.providers.values()
        proxy_keys = client_keys(os.environ)  # checked at start: no empty entries
        pools = {} if settings.key_passthrough else key_pools(settings.providers)
        if cluster is not None:
            pools = cluster.share_rests(pools)
        return cls(
            settings=settings,
            default_route=settings.default_route,
            impl=select(settings.implementation),
            signing_key=load_signing_key(settings.signing_key_file),
            http=H1Client(connect_timeout=settings.connect_timeout),
            pools=pools,
            admission=admission if admission.active else None,
            shutdown=Shutdown(settings.shutdown_grace),
            redactor=Redactor(key for p in providers for _, key in p.api_keys()),
            proxy_keys=proxy_keys,
            browser=browser_guard.Policy.for_settings(
                settings, client_keys=bool(proxy_keys) or settings.key_passthrough
            ),
            started=time.time(),
            cluster=cluster,
            turns=PreviousTurns(max_bytes=settings.session_reuse_bytes),
        )


def start_team(worker: Worker) -> TeamKeys | None:
    """The worker's named keys, after its usage service (the same prices); with them the
    browser guard is off, as with HYDRA_PROXY_KEYS (a key is needed anyway)."""
    from ...team import service

    usage = worker.usage
    cluster = worker.cluster
    counters = cluster.member_counters() if cluster is not None else None
    team = service.start(worker.settings, usage.prices if usage is not None else None, counters)
    if team is not None:
        worker.browser = browser_guard.Policy.for_settings(worker.settings, client_keys=True)
    return team


def keys_refresh() -> float:
    """Seconds between two looks at the key store (HYDRA_KEYS_REFRESH, default 1)."""
    import os

    from ...team.service import REFRESH_ENV

    return float(os.environ.get(REFRESH_ENV, "1") or 1)


def start_usage(settings: Settings) -> UsageService | None:
    """The worker's usage accounting: the ledger, metrics, prices, traces (None: all off)."""
    if not (settings.usage_ledger or settings.usage_metrics or settings.usage_tracing):
        return None
    routes = settings.routes
    return UsageService.start(
        ledger_url=settings.usage_ledger,
        pricing_overrides=settings.pricing,
        metrics=settings.usage_metrics,
        tracing=settings.usage_tracing,
        known_models=[m for r in routes for m in (r.model, r.match) if m and "*" not in m]
        + ([settings.target_model] if settings.target_model else []),
        known_routes=[r.match for r in routes],
        known_providers=list(settings.providers),
    )
