"""Settings: the validated, immutable configuration a server runs with.

Settings reach granian worker processes as the argument of the app loader (server/transport/run.py),
so they stay plain picklable data; mutable per-process state (key pools) is built from
them in each worker (`config.keys.key_pools`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .providers import Provider
from .routes import RequestTraits, Route, RouteDecision, decide

DEFAULT_LEDGER = "sqlite:~/.hydra-proxy/usage.sqlite3"  # usage.backends.DEFAULT_SQLITE_PATH
DEFAULT_PORT = 3456


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 1
    target_provider: str = "openai"
    # Whether the target provider was chosen (flag, variable or [server] provider) rather
    # than the default: only a chosen one without its key stops the server.
    target_chosen: bool = False
    target_model: str | None = None
    spoof_model: str | None = None
    providers: dict[str, Provider] = field(default_factory=dict)
    routes: tuple[Route, ...] = ()
    implementation: str = "auto"
    insecure_no_auth: bool = False
    # Forward the client's own key (x-api-key / Authorization) upstream instead of the
    # provider's: off unless asked for, and exclusive with proxy keys (HYDRA_PROXY_KEYS).
    key_passthrough: bool = False
    # Limits and timeouts (seconds).
    max_body_bytes: int = 32 * 1024 * 1024
    # Seconds a client may take to send its whole request body (slow uploads get a 408).
    body_timeout: float = 30.0
    # Deepest nesting of arrays and objects a request body may have (a 400 past it).
    max_json_depth: int = 128
    # Bytes of recent request bodies each worker keeps, with their parsed messages, so that
    # a session's next request parses and translates only what is new (0: none kept).
    session_reuse_bytes: int = 64 * 1024 * 1024
    # A stream whose client takes nothing for this long (the upstream paused meanwhile:
    # server/pipeline/relay.py) is ended.
    send_stall_timeout: float = 60.0
    max_event_bytes: int = 16 * 1024 * 1024
    connect_timeout: float = 10.0
    first_byte_timeout: float = 300.0
    idle_timeout: float = 300.0
    ping_interval: float = 10.0
    retries: int = 2
    shutdown_grace: float = 30.0
    # The signing key files: the first signs, every one verifies (a rotation). None: the
    # default file (hydra_proxy.signing_key).
    signing_key_file: str | tuple[str, ...] | None = None
    # Without client keys (server/checks/browser_guard.py): more Host names that name this proxy,
    # and the web origins that may call it (CORS is answered for those only).
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    # Continuation suffix for Chat clients: auto (clients known to replay reasoning, or the
    # x-hydra-continuation request header), always, never.
    continuation: str = "auto"
    # Request headers that name a client's session besides the known ones
    # (server/pipeline/sessions.py SESSION_HEADERS), lower case.
    session_headers: tuple[str, ...] = ()
    # `[pricing."glob"]` overrides for the usage ledger's price table (validated here,
    # applied by hydra_proxy.usage: UsageService.start(pricing_overrides=...)).
    pricing: dict[str, dict[str, Any]] = field(default_factory=dict)
    # `[usage]`: the ledger's URL (None: no ledger), metrics and OpenTelemetry traces.
    usage_ledger: str | None = DEFAULT_LEDGER
    usage_metrics: bool = True
    usage_tracing: bool = False
    # `[admission]` (server/checks/admission.py): concurrent upstream exchanges per worker, per
    # provider (overrides by name) and per client key, 0 unbounded; the queue past them.
    provider_streams: int = 0
    provider_stream_overrides: tuple[tuple[str, int], ...] = ()
    key_streams: int = 0
    queue_timeout: float = 30.0
    queue_depth: int = 256
    when_full: str = "fallback"
    # `[cluster]` (hydra_proxy.cluster): the Redis every replica counts its bounds in (None:
    # the workers of one serve share a host store), how long a dead process's slots stay
    # held, and what the bounds do while Redis is unreachable ("local" or "closed").
    redis_url: str | None = None
    lease_ttl: float = 10.0
    on_store_failure: str = "local"
    # Bounds every wait on Redis: a store that does not connect or answer within it is
    # down, and on_store_failure decides at once.
    redis_timeout: float = 0.25
    redis_ca_file: str | None = None
    # Sentinel: the primary named `sentinel_service` by any of `sentinels` (HOST:PORT);
    # redis_url then gives only the scheme, credentials and database.
    sentinels: tuple[str, ...] = ()
    sentinel_service: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)
    redis_cluster: bool = False
    # `[identity]` (hydra_proxy.team.identity): the identity provider whose JWTs name
    # members, as checked (no "jwks": none).
    identity: dict[str, Any] = field(default_factory=dict)
    # The live config (config.overlay) merged over the file, and its stored version (0:
    # none): every worker and replica sharing the key store converges on the newest.
    overlay: dict[str, Any] = field(default_factory=dict)
    overlay_version: int = 0
    # Where the settings came from: the config file, the lines of its tables (for errors
    # found after loading) and the CLI flags (for `reload`).
    config_file: str | None = None
    lines: tuple[tuple[tuple[str | int, ...], int], ...] = field(
        default=(), repr=False, compare=False
    )
    flags: tuple[tuple[str, Any], ...] = field(default=(), repr=False, compare=False)

    @property
    def default_route(self) -> Route:
        """The route of a request no configured route claims: the target provider."""
        return Route("*", self.target_provider, self.target_model, self.spoof_model)

    def decide(self, traits: RequestTraits) -> RouteDecision | None:
        """The route a request takes and its attempts in order (None: nothing routes it)."""
        return decide(self.routes, self.default_route, self.providers, traits)

    def resolve(self, model: str) -> tuple[Provider, Route] | None:
        """The provider and route for a requested model name alone (None: nothing routes
        it). Kept for callers that have only the name; `decide` sees the whole request."""
        decision = self.decide(RequestTraits(model))
        if decision is None:
            return None
        return decision.attempts[0].provider, decision.route

    def default_reachable(self) -> bool:
        """Whether any request can reach the target provider (no unconditional `*` route
        claims everything first)."""
        return not any(r.match == "*" and not r.conditional for r in self.routes)
