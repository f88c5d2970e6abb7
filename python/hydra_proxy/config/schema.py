"""The config file's schema: every table and key, its type and what it means.

One table drives validation (`config.validate`), the error hints and docs/CONFIG.md.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from ..canonical.effort import EFFORT_FORMS
from .protocols import PROTOCOLS
from .providers import CACHE_HINTS, MAX_TOKENS_FIELDS, REASONING_FIELDS
from .routes import EFFORTS

IMPLEMENTATIONS = ("auto", "native", "python")
# orjson writes at most 254 levels, and a translated request nests a client's values a few
# levels deeper than the client did: past this, an answer could not be written.
MAX_JSON_DEPTH = 200
CONTINUATION_MODES = ("auto", "always", "never")


# Numbers that must be above `minimum` (not equal): timeouts and intervals.
STRICTLY_POSITIVE = {
    "connect_timeout", "first_byte_timeout", "idle_timeout", "ping_interval", "shutdown_grace",
    "redis_timeout",
    "queue_timeout",
    "body_timeout", "send_stall_timeout",
}  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One key of a table: its TOML type(s), allowed values, and (for [server]) the
    environment variable that overrides it."""

    types: tuple[type, ...]
    doc: str
    choices: tuple[str, ...] = ()
    env: str | None = None
    minimum: float | None = None
    maximum: float | None = None

    def in_range(self, key: str, value: float) -> bool:
        if self.minimum is not None and (
            value < self.minimum or (key in STRICTLY_POSITIVE and value <= self.minimum)
        ):
            return False
        return self.maximum is None or value <= self.maximum

    def range_text(self, key: str) -> str:
        """What a number for `key` must be, e.g. "must be a whole number from 1 to 65535"."""
        kind = "a whole number" if int in self.types and float not in self.types else "a number"
        if self.maximum is not None:
            return f"must be {kind} from {self.minimum:g} to {self.maximum:g}"
        if key in STRICTLY_POSITIVE:
            return f"must be {kind} above {self.minimum:g}"
        if self.minimum is not None:
            return f"must be {kind} of at least {self.minimum:g}"
        return f"must be {kind}"

    @property
    def type_name(self) -> str:
        names = {str: "a string", bool: "true or false", int: "a whole number",
                 float: "a number", list: "a list", dict: "a table"}  # fmt: skip
        return " or ".join(names[t] for t in self.types)


def _num(doc: str, env: str, kind: type = float, minimum: float = 0) -> Field:
    return Field((kind,) if kind is float else (int,), doc, env=env, minimum=minimum)


SERVER: dict[str, Field] = {
    "host": Field((str,), "address to bind", env="HYDRA_PROXY_HOST"),
    "port": Field((int,), "port to listen on", env="HYDRA_PROXY_PORT", minimum=1, maximum=65535),
    "workers": Field((int,), "worker processes", env="HYDRA_PROXY_WORKERS", minimum=1),
    "provider": Field((str,), "target provider: serves every request no route claims",
                    env="HYDRA_TARGET_PROVIDER"),
    "model": Field((str,), "upstream model for the target provider (default: the requested name)",
                 env="HYDRA_TARGET_MODEL"),
    "spoof_model": Field((str,), "model name reported to Anthropic clients", env="HYDRA_SPOOF_MODEL"),
    "passthrough": Field((bool,), "route claude-* models to the anthropic provider",
                       env="HYDRA_PASSTHROUGH"),
    "implementation": Field((str,), "transducer implementation", IMPLEMENTATIONS,
                          env="HYDRA_PROXY_IMPL"),
    "signing_key_file": Field((str, list), "file(s) of the signing keys: the first signs, "
                            "every one verifies", env="HYDRA_SIGNING_KEY_FILE"),
    "allowed_hosts": Field((list,), "more Host names the proxy answers to without client keys",
                         env="HYDRA_ALLOWED_HOSTS"),
    "allowed_origins": Field((list,), "web origins allowed to call the proxy (CORS)",
                           env="HYDRA_ALLOWED_ORIGINS"),
    "continuation": Field((str,), "continuation suffix for Chat clients", CONTINUATION_MODES,
                        env="HYDRA_CONTINUATION"),
    "session_headers": Field((list,), "more request headers that name a client's session",
                           env="HYDRA_SESSION_HEADERS"),
    "key_passthrough": Field((bool,), "forward the client's key upstream (no proxy keys)",
                             env="HYDRA_KEY_PASSTHROUGH"),
    "max_body_bytes": _num("largest request body", "HYDRA_MAX_BODY_BYTES", int, 1),
    "body_timeout": _num("seconds a client may take to send its request body",
                         "HYDRA_BODY_TIMEOUT"),
    "max_json_depth": Field((int,), "deepest nesting of a request body's JSON",
                          env="HYDRA_MAX_JSON_DEPTH", minimum=1, maximum=MAX_JSON_DEPTH),
    "session_reuse_bytes": _num("bytes of recent request bodies kept per worker for their "
                                "sessions' next requests", "HYDRA_SESSION_REUSE_BYTES", int, 0),
    "send_stall_timeout": _num("seconds a paused stream waits for its client to read",
                               "HYDRA_SEND_STALL_TIMEOUT"),
    "max_event_bytes": _num("largest upstream SSE event", "HYDRA_MAX_EVENT_BYTES", int, 1),
    "connect_timeout": _num("seconds to connect upstream", "HYDRA_CONNECT_TIMEOUT", float, 0),
    "first_byte_timeout": _num("seconds to the upstream's first byte",
                               "HYDRA_FIRST_BYTE_TIMEOUT"),
    "idle_timeout": _num("seconds an upstream stream may stay silent", "HYDRA_IDLE_TIMEOUT"),
    "ping_interval": _num("seconds between pings to Anthropic clients", "HYDRA_PING_INTERVAL"),
    "retries": _num("upstream retries before the first byte", "HYDRA_RETRIES", int, 0),
    "shutdown_grace": _num("seconds in-flight streams get at shutdown", "HYDRA_SHUTDOWN_GRACE"),
}  # fmt: skip

PROVIDER: dict[str, Field] = {
    "preset": Field((str,), "start from this shipped preset (default: the table's own name)"),
    "kind": Field((str,), "upstream protocol", PROTOCOLS),
    "base_url": Field((str,), "endpoint, e.g. https://api.deepseek.com/v1"),
    "api_key_env": Field((str, list), "variable(s) holding the key(s): a list is a key pool"),
    "api_keys_env": Field((list,), "more variables for the key pool"),
    "api_key_optional": Field((bool,), "the upstream needs no key (a local server)"),
    "reasoning": Field((bool,), "takes reasoning_effort"),
    "effort_form": Field((str,), "how it takes a reasoning level", EFFORT_FORMS),
    "effort_levels": Field((list,), "the levels its reasoning_effort names (default OpenAI's)"),
    "reasoning_field": Field((str,), "where reasoning text streams and is replayed",
                           REASONING_FIELDS),
    "replay_reasoning": Field((bool,), "needs reasoning back on assistant tool-call turns"),
    "max_tokens_field": Field((str,), "the token-limit parameter", MAX_TOKENS_FIELDS),
    "max_tokens_limit": Field((int,), "clamp max_tokens to this", minimum=1),
    "sampling": Field((bool,), "takes temperature/top_p"),
    "context_window": Field((int,), "context window in tokens (GET /v1/models)", minimum=1),
    "max_output": Field((int,), "largest output in tokens (GET /v1/models)", minimum=1),
    "cache_hints": Field((str,), "the prompt-cache hint the upstream takes", CACHE_HINTS),
    "vision": Field((bool,), "the upstream reads images"),
}  # fmt: skip

ROUTE: dict[str, Field] = {
    "name": Field((str,), "how logs name the route"),
    "match": Field((str,), "glob on the requested model name (default \"*\")"),
    "provider": Field((str, list), "provider, or a list of providers tried in order"),
    "model": Field((str,), "upstream model (default: the requested name)"),
    "fallback": Field((list,), "providers tried next: names or {provider, model} tables"),
    "background": Field((bool,), "tool-less calls with max_tokens <= 1024"),
    "thinking": Field((bool,), "the request asks for thinking"),
    "images": Field((bool,), "the request carries images"),
    "subagent": Field((bool,), "a Claude Code subagent's request"),
    "teammate": Field((bool,), "a request with an agent id (x-claude-code-agent-id): a teammate's"),
    "server_tools": Field((bool,), "the request carries web search (a server tool)"),
    "long_context": Field((int,), "estimated input tokens above this", minimum=1),
    "client": Field((str,), "the client's protocol", PROTOCOLS),
    "spoof_model": Field((str,), "model name reported to the client"),
    "max_tokens_limit": Field((int,), "clamp max_tokens to this", minimum=1),
    "effort": Field((str, dict), "a fixed reasoning effort, or a map requested -> sent", EFFORTS),
    "context_window": Field((int,), "context window reported by GET /v1/models", minimum=1),
    "max_output": Field((int,), "max output reported by GET /v1/models", minimum=1),
    "vision": Field((bool,), "the upstream reads images (default: the provider's vision)"),
    "aliases": Field((list,), "more names clients may ask for (listed by GET /v1/models)"),
}  # fmt: skip

FALLBACK_ENTRY: dict[str, Field] = {
    "provider": Field((str,), "provider name"),
    "model": Field((str,), "upstream model on this provider (default: the route's)"),
}

# `[pricing."model-glob"]`: price overrides for the usage ledger (docs/USAGE.md), in USD
# per million tokens; read by hydra_proxy.usage.pricing (PriceTable.with_overrides).
PRICE: dict[str, Field] = {
    "input": Field((float,), "USD per million input tokens (required)", minimum=0),
    "output": Field((float,), "USD per million output tokens (required)", minimum=0),
    "cache_read": Field((float,), "cache reads (default: as input)", minimum=0),
    "cache_write": Field((float,), "cache writes (default: as input)", minimum=0),
    "reasoning": Field((float,), "reasoning tokens (default: as output)", minimum=0),
    "as_of": Field((str,), "the date of the price"),
}
PRICE_REQUIRED = ("input", "output")

# `[usage]`: the usage ledger and traces (docs/USAGE.md).
USAGE: dict[str, Field] = {
    "ledger": Field(
        (str,),
        'where records go: "sqlite:PATH", "postgresql://..." or "off"',
        env="HYDRA_USAGE_LEDGER",
    ),
    "metrics": Field((bool,), "Prometheus metrics at GET /metrics (default true)"),
    "tracing": Field((bool,), "OpenTelemetry traces (needs hydra-proxy[otel])"),
}

# `[admission]`: bounds on concurrent upstream exchanges, per worker process, and the fair
# queue past them (server/checks/admission.py). 0 is unbounded.
WHEN_FULL = ("fallback", "queue")
ADMISSION: dict[str, Field] = {
    "provider_streams": _num("exchanges per provider at once (0: unbounded)",
                             "HYDRA_PROVIDER_STREAMS", int, 0),
    "key_streams": _num("exchanges per client key at once (0: unbounded)",
                        "HYDRA_KEY_STREAMS", int, 0),
    "queue_timeout": _num("seconds a request may wait for its slot", "HYDRA_QUEUE_TIMEOUT"),
    "queue_depth": _num("requests that may wait per provider or key", "HYDRA_QUEUE_DEPTH",
                        int, 0),
    "when_full": Field((str,), "a full provider with a fallback: go on to it, or wait",
                       WHEN_FULL, env="HYDRA_WHEN_FULL"),
    "providers": Field((dict,), "per-provider bounds: NAME = exchanges (0: unbounded)"),
}  # fmt: skip

# `[cluster]`: where the bounds are counted when several processes serve (hydra_proxy.cluster,
# docs/DEPLOY.md). Without redis_url, the workers of one `serve` share a host store.
STORE_FAILURE = ("local", "closed")
CLUSTER: dict[str, Field] = {
    "redis_url": Field((str,), "Redis shared by every replica: redis://HOST:6379/0",
                       env="HYDRA_REDIS_URL"),
    "lease_ttl": Field((float, int), "seconds a dead process's slots stay held", env="HYDRA_LEASE_TTL",
                       minimum=1, maximum=3600),
    "on_store_failure": Field((str,), "Redis unreachable: per-replica bounds divided by the "
                              "replicas, or refuse with 503", STORE_FAILURE,
                              env="HYDRA_ON_STORE_FAILURE"),
    "redis_timeout": Field((float, int), "seconds to connect to Redis or for it to answer a "
                           "check; past it the store is down", env="HYDRA_REDIS_TIMEOUT",
                           minimum=0, maximum=30),
    "redis_ca_file": Field((str,), "CA bundle (PEM) that signs a rediss:// server's certificate",
                           env="HYDRA_REDIS_CA_FILE"),
    "sentinels": Field((list,), "Sentinels (HOST:PORT) that name the Redis primary",
                       env="HYDRA_REDIS_SENTINELS"),
    "sentinel_service": Field((str,), "the primary's name at the Sentinels",
                              env="HYDRA_REDIS_SENTINEL_SERVICE"),
    "sentinel_password": Field((str,), "the Sentinels' own password (requirepass)",
                               env="HYDRA_REDIS_SENTINEL_PASSWORD"),
    "redis_cluster": Field((bool,), "redis_url is a node of a Redis Cluster",
                           env="HYDRA_REDIS_CLUSTER"),
}  # fmt: skip

# `[identity]`: members from the team's identity provider, by the JWTs it signs
# (hydra_proxy.team.identity, docs/CONFIG.md).
IDENTITY: dict[str, Field] = {
    "jwks": Field((str,), "the provider's key set: a JWKS file or an https:// URL",
                  env="HYDRA_IDENTITY_JWKS"),
    "issuer": Field((str,), "the tokens' iss (required)"),
    "audience": Field((str,), "the tokens' aud: this proxy's name at the provider (required)"),
    "member_claim": Field((str,), "the claim naming the member (default sub; a.b: nested)"),
    "team_claim": Field((str,), "the claim naming the member's team"),
    "admin_claim": Field((str,), "the claim that makes an admin when it holds admin_value"),
    "admin_value": Field((str,), "the value of admin_claim (or one of its list) of an admin"),
    "leeway": Field((float, int), "seconds of clock difference allowed on exp and nbf",
                    minimum=0, maximum=600),
    "jwks_refresh": Field((float, int), "seconds between reads of the key set (default 300)",
                          minimum=10, maximum=86400),
}  # fmt: skip
IDENTITY_REQUIRED = ("issuer", "audience")

TOP_LEVEL = {
    "server": "a table",
    "providers": "a table of tables",
    "routes": "an array of tables",
    "pricing": "a table of tables",
    "usage": "a table",
    "admission": "a table",
    "cluster": "a table",
    "identity": "a table",
}


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest known name, when there is a plausible one."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None
