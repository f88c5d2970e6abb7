"""Prometheus metrics for ``GET /metrics``, correct across granian worker processes.

With several workers each process counts in its own memory-mapped files under
``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode) and :func:`render`
merges the files of all workers, so any worker can answer a scrape. The server calls
:func:`setup_multiprocess_dir` in the main process BEFORE the workers start; each worker
creates its :class:`Metrics` at startup and calls :meth:`Metrics.close` at shutdown (which
removes its live gauge, open streams, from the sum).

Observations are cheap on the request path: :meth:`Metrics.observe` appends the record to
an in-process queue, and :meth:`Metrics.flush` (a thread, every ``flush_interval``
seconds, 1 by default; a scrape of this worker; :meth:`Metrics.close`) adds them up per
series and writes each sum once into prometheus-client's values (in multiprocess mode each
write is one into a memory-mapped file). A scrape shows this worker's requests at once,
another worker's at most ``flush_interval`` seconds late; every count is exact once flushed.

Labels are bounded: a model name becomes its own label if it is listed in ``known_models``
(the configured routes), or is among the first ``max_models`` names the price table knows,
or the first ``max_models`` other names one process has seen; the rest are ``other``. Routes, providers,
error types and named keys and their teams are capped the same way; status is the HTTP status code.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .record import UsageRecord

__all__ = [
    "MULTIPROC_ENV",
    "LabelCap",
    "Metrics",
    "mark_process_dead",
    "multiprocess_dir",
    "render",
    "setup_multiprocess_dir",
]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
OTHER = "other"

# Seconds. LLM requests run from ~100 ms to minutes; first bytes from ~50 ms to ~30 s.
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 600)
TTFB_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
TOKEN_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")
# Seconds a request waited for an admission slot (server/checks/admission.py): up to its timeout.
QUEUE_WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80)

_LABEL_TEXT = re.compile(r"[^A-Za-z0-9._:/@*+-]")


def setup_multiprocess_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Create an empty directory for multiprocess metrics and point the env var at it.

    Call in the server's main process before the workers start (they inherit the env). A
    directory left by an earlier run is emptied: its counters belong to dead processes.
    """
    if path is None:
        directory = Path(tempfile.mkdtemp(prefix="hydra-prometheus-"))
    else:
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        # Only prometheus-client's own files (counter_<pid>.db, gauge_livesum_<pid>.db...):
        # a mistyped path never loses anything else.
        for stale in directory.glob("*_*.db"):
            stale.unlink()
    os.environ[MULTIPROC_ENV] = str(directory)
    _use_multiprocess_values()
    return directory


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def _use_multiprocess_values() -> None:
    # prometheus_client picks its value class when first imported; a process that imported
    # it before the env var was set would otherwise count in plain memory.
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def mark_process_dead(pid: int) -> None:
    """Drop a dead worker's live gauges (the main process calls it when a worker exits)."""
    from prometheus_client import multiprocess

    directory = multiprocess_dir()
    if directory is not None:
        multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


class LabelCap:
    """Maps label values into a bounded set: at most ``len(known) + 2 * cap`` distinct labels.

    ``known`` always pass; then the first ``cap`` values ``is_known`` accepts, and the first
    ``cap`` others; every later value is ``other``.
    """

    def __init__(
        self, cap: int, known: Iterable[str] = (), is_known: Callable[[str], bool] | None = None
    ) -> None:
        self.cap = cap
        self.known = frozenset(known)
        self.is_known = is_known
        self.seen: dict[str, str] = {}
        self.extras = 0  # values admitted beyond the known ones
        self.recognised = 0  # values admitted by is_known (a glob matches endless names)
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        if not value:
            return "none"
        label = self.seen.get(value)
        if label is not None:
            return label
        with self._lock:
            label = self.seen.get(value)
            if label is None:
                label = self._admit(value)
                # Admitted values are few (at most len(known) + 2 * cap): always kept, so a
                # value keeps its label. Values that became "other" are kept while room lasts.
                if label != OTHER or len(self.seen) < 4 * self.cap + len(self.known):
                    self.seen[value] = label
        return label

    def _admit(self, value: str) -> str:
        clean = _LABEL_TEXT.sub("_", value)[:80]
        if value in self.known:
            return clean
        if self.is_known is not None and self.recognised < self.cap and self.is_known(value):
            self.recognised += 1
            return clean
        if self.extras < self.cap:
            self.extras += 1
            return clean
        return OTHER


class Metrics:
    """The proxy's Prometheus metrics; :meth:`observe` once per finished request."""

    def __init__(
        self,
        *,
        known_models: Iterable[str] = (),
        known_routes: Iterable[str] = (),
        known_providers: Iterable[str] = (),
        max_models: int = 32,
        max_routes: int = 32,
        max_providers: int = 16,
        max_error_types: int = 24,
        max_keys: int = 64,
        is_priced: Callable[[str], bool] | None = None,
    ) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        if multiprocess_dir() is not None:
            _use_multiprocess_values()
        # A private registry: several Metrics (tests) never collide; in multiprocess mode
        # render() reads the files, not this registry.
        self.registry = CollectorRegistry()
        self.model = LabelCap(max_models, known_models, is_priced)
        self.route = LabelCap(max_routes, known_routes)
        self.provider = LabelCap(max_providers, known_providers)
        self.error_type = LabelCap(max_error_types)
        self.key = LabelCap(max_keys)
        self.team = LabelCap(max_keys // 2)
        r = self.registry
        base = ("route", "provider", "model")
        self.requests = Counter(
            "hydra_requests", "Finished requests.", (*base, "protocol", "status"), registry=r
        )
        self.tokens = Counter(
            "hydra_tokens", "Tokens as the upstream reported them (or estimated).",
            (*base, "kind"), registry=r,
        )  # fmt: skip
        self.estimated = Counter(
            "hydra_requests_estimated_usage",
            "Requests whose usage the upstream did not report (the tokens are estimates).",
            base, registry=r,
        )  # fmt: skip
        self.cost = Counter(
            "hydra_cost_usd", "Cost in USD, from the price table.", base, registry=r
        )
        self.unpriced = Counter(
            "hydra_requests_unpriced", "Requests to a model without a price.", base, registry=r
        )
        self.latency = Histogram(
            "hydra_request_duration_seconds", "Time from request to the last byte.",
            base, buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.ttfb = Histogram(
            "hydra_time_to_first_byte_seconds", "Time from request to the first byte sent.",
            base, buckets=TTFB_BUCKETS, registry=r,
        )  # fmt: skip
        self.errors = Counter(
            "hydra_upstream_errors", "Requests that ended in an error, by error type.",
            ("route", "provider", "error_type"), registry=r,
        )  # fmt: skip
        self.open_streams = Gauge(
            "hydra_open_streams", "Streams being relayed now.", ("route", "provider"),
            multiprocess_mode="livesum", registry=r,
        )  # fmt: skip
        # Named keys (hydra_proxy.team): requests (refusals by their status), cost, tokens.
        key_labels = ("key", "team")
        self.key_requests = Counter(
            "hydra_key_requests", "Requests of a named key, by status.",
            (*key_labels, "status"), registry=r,
        )  # fmt: skip
        self.key_cost = Counter(
            "hydra_key_cost_usd", "Cost in USD of a named key's requests.", key_labels,
            registry=r,
        )  # fmt: skip
        self.key_tokens = Counter(
            "hydra_key_tokens", "Tokens of a named key's requests, every kind.", key_labels,
            registry=r,
        )  # fmt: skip
        self.ledger_dropped = Counter(
            "hydra_ledger_dropped_records", "Usage records the ledger could not keep.", registry=r
        )
        # Children per label tuple: labels() is the costly part of an increment.
        self._children: dict[tuple[str, ...], tuple[Any, ...]] = {}
        self._error_children: dict[tuple[str, str, str], Any] = {}
        # What the request path hands over (deque appends and pops are thread-safe).
        self._pending: deque[UsageRecord] = deque()
        self._streams: deque[tuple[str, str, int]] = deque()
        self._flush_lock = threading.Lock()
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._latency_bounds = (*map(float, LATENCY_BUCKETS), float("inf"))
        self._ttfb_bounds = (*map(float, TTFB_BUCKETS), float("inf"))
        self._init_admission()

    # --- the request path: appends only ----------------------------------------------------

    def observe(self, rec: UsageRecord) -> None:
        """Count one finished request (at the next :meth:`flush`)."""
        self._pending.append(rec)

    def stream_opened(self, route: str, provider: str) -> None:
        self._streams.append((route, provider, 1))

    def stream_closed(self, route: str, provider: str) -> None:
        self._streams.append((route, provider, -1))

    def count_dropped(self, count: int) -> None:
        """The ledger's ``on_drop`` (rare: written at once)."""
        self.ledger_dropped.inc(count)

    # --- flushing ----------------------------------------------------------------------

    def start(self, flush_interval: float = 1.0) -> None:
        """Flush every ``flush_interval`` seconds from a thread of this process."""
        if self._flusher is None:
            self._flusher = threading.Thread(
                target=self._run, args=(flush_interval,), name="hydra-metrics", daemon=True
            )
            self._flusher.start()

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.flush()

    # One pass over the records with the sums inlined: a call per record holds the GIL longer.
    def flush(self) -> None:  # noqa: C901
        """Add up what was observed since the last flush and write each sum once."""
        with self._flush_lock:
            self._flush_streams()
            pending = self._pending
            if not pending:
                return
            # Summed per raw (route, provider, model, protocol, status): labels are mapped
            # once per distinct value, in the order first seen (what LabelCap admits).
            sums: dict[tuple[str, str, str, str, int], list[Any]] = {}
            errors: dict[tuple[str, str, str], int] = {}
            keys: dict[tuple[str, str, int], list[float]] = {}
            latency_bounds, ttfb_bounds = self._latency_bounds, self._ttfb_bounds
            while pending:
                try:
                    rec = pending.popleft()
                except IndexError:
                    break
                key = (rec.route, rec.provider, rec.target_model, rec.protocol, rec.status)
                acc = sums.get(key)
                if acc is None:
                    # requests, 5 token kinds, cost, unpriced, estimated, latency sum and
                    # buckets, ttfb sum and buckets
                    acc = sums[key] = [
                        0, 0, 0, 0, 0, 0, 0.0, 0, 0,
                        0.0, [0] * len(latency_bounds), 0.0, [0] * len(ttfb_bounds),
                    ]  # fmt: skip
                acc[0] += 1
                acc[1] += rec.input_tokens
                acc[2] += rec.output_tokens
                acc[3] += rec.cache_read_tokens
                acc[4] += rec.cache_write_tokens
                acc[5] += rec.reasoning_tokens
                cost = rec.cost_usd
                if cost is None:
                    acc[7] += 1
                else:
                    acc[6] += cost
                if rec.estimated:
                    acc[8] += 1
                latency = rec.latency_ms / 1000
                acc[9] += latency
                acc[10][bisect_left(latency_bounds, latency)] += 1
                if rec.ttfb_ms is not None:
                    ttfb = rec.ttfb_ms / 1000
                    acc[11] += ttfb
                    acc[12][bisect_left(ttfb_bounds, ttfb)] += 1
                if rec.error_type is not None:
                    error = (rec.route, rec.provider, rec.error_type)
                    errors[error] = errors.get(error, 0) + 1
                if rec.key_name is not None:
                    keyed = keys.setdefault((rec.key_name, rec.team or "", rec.status), [0, 0.0, 0])
                    keyed[0] += 1
                    keyed[1] += cost or 0.0
                    keyed[2] += rec.input_tokens + rec.output_tokens + rec.cache_read_tokens
                    keyed[2] += rec.cache_write_tokens
            for (route, provider, model, protocol, status), acc in sums.items():
                series = self._series(
                    self.route(route), self.provider(provider), self.model(model), protocol, status
                )
                self._apply(series, acc)
            for (route, provider, error_type), count in errors.items():
                labels = (self.route(route), self.provider(provider), self.error_type(error_type))
                child = self._error_children.get(labels)
                if child is None:
                    child = self._error_children[labels] = self.errors.labels(*labels)
                child.inc(count)
            for (name, team, status), keyed in keys.items():
                pair = (self.key(name), self.team(team))
                self.key_requests.labels(*pair, str(status)).inc(keyed[0])
                if keyed[1]:
                    self.key_cost.labels(*pair).inc(keyed[1])
                if keyed[2]:
                    self.key_tokens.labels(*pair).inc(keyed[2])

    def _flush_streams(self) -> None:
        streams = self._streams
        if not streams:
            return
        deltas: dict[tuple[str, str], int] = {}
        while streams:
            try:
                route, provider, delta = streams.popleft()
            except IndexError:
                break
            key = (self.route(route), self.provider(provider))
            deltas[key] = deltas.get(key, 0) + delta
        for (route, provider), delta in deltas.items():
            if delta:
                self.open_streams.labels(route, provider).inc(delta)

    def _series(
        self, route: str, provider: str, model: str, protocol: str, status: int
    ) -> tuple[Any, ...]:
        key = (route, provider, model, protocol, str(status))
        children = self._children.get(key)
        if children is None:
            base = (route, provider, model)
            children = (
                self.requests.labels(*base, protocol, str(status)),
                *(self.tokens.labels(*base, kind) for kind in TOKEN_KINDS),
                self.cost.labels(*base),
                self.unpriced.labels(*base),
                self.estimated.labels(*base),
                self.latency.labels(*base),
                self.ttfb.labels(*base),
            )
            self._children[key] = children
        return children

    @staticmethod
    def _apply(children: tuple[Any, ...], acc: list[Any]) -> None:
        requests, *tokens, cost, unpriced, estimated, latency, ttfb = children
        requests.inc(acc[0])
        for child, count in zip(tokens, acc[1:6], strict=True):
            if count:
                child.inc(count)
        if acc[6]:
            cost.inc(acc[6])
        if acc[7]:
            unpriced.inc(acc[7])
        if acc[8]:
            estimated.inc(acc[8])
        _add_observations(latency, acc[9], acc[10])
        _add_observations(ttfb, acc[11], acc[12])

    # --- admission control (server/checks/admission.py) -----------------------------------------
    # Separate from the request metrics above: recorded only on the slow path, a request
    # that had to wait for a slot (a request with room never calls these). `gate` is a
    # provider's name or "client_key".

    def _init_admission(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        r = self.registry
        self.admission_waiting = Gauge(
            "hydra_admission_queue_depth", "Requests waiting for an admission slot now.",
            ("gate",), multiprocess_mode="livesum", registry=r,
        )  # fmt: skip
        self.admission_wait = Histogram(
            "hydra_admission_wait_seconds", "Time a request waited for its admission slot.",
            ("gate",), buckets=QUEUE_WAIT_BUCKETS, registry=r,
        )  # fmt: skip
        self.admission_rejections = Counter(
            "hydra_admission_rejections", "Requests refused by admission control (429).",
            ("gate", "reason"), registry=r,
        )  # fmt: skip

    def admission_queued(self, gate: str) -> None:
        self.admission_waiting.labels(self.provider(gate)).inc()

    def admission_dequeued(self, gate: str, waited: float) -> None:
        label = self.provider(gate)
        self.admission_waiting.labels(label).dec()
        self.admission_wait.labels(label).observe(waited)

    def admission_refused(self, gate: str, reason: str) -> None:
        self.admission_rejections.labels(self.provider(gate), reason).inc()

    # --- end of admission control ----------------------------------------------------------

    def close(self) -> None:
        """At worker shutdown: the last observations are written, and this process's
        open-streams gauge leaves the sum."""
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join()
        self.flush()
        if multiprocess_dir() is not None:
            mark_process_dead(os.getpid())


def _add_observations(histogram: Any, total: float, counts: list[int]) -> None:
    """Many observations of one histogram child at once: what ``observe`` would have added
    one by one (its sum, and per observation 1 in the first bucket whose bound holds it;
    the buckets are cumulated when collected). prometheus-client has no batch observe."""
    if not any(counts):
        return
    histogram._sum.inc(total)
    for bucket, count in zip(histogram._buckets, counts, strict=True):
        if count:
            bucket.inc(count)


def render(metrics: Metrics | None = None) -> tuple[str, bytes]:
    """``(content_type, body)`` for ``GET /metrics``: every worker's series merged."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    if metrics is not None:
        metrics.flush()  # this worker's own observations, up to now
    directory = multiprocess_dir()
    if directory is not None:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        return CONTENT_TYPE_LATEST, generate_latest(registry)
    if metrics is None:
        return CONTENT_TYPE_LATEST, b""
    return CONTENT_TYPE_LATEST, generate_latest(metrics.registry)
