"""Configuration: providers, routes, key pools, and settings a user can trust.

Modules by job:

- `providers`: `Provider` and the shipped presets (``hydra_proxy/data/providers.toml``).
- `routes`: `Route`, `RequestTraits` (`request_traits`), `RouteDecision` (`decide`).
- `keys`: `KeyPool` (round-robin, rests by cause: a rejected key long, a 429 its
  retry-after or a short growing backoff, a refused model or request never).
- `schema`: every table and key of the config file; `validate` checks a file against it;
  `source` finds the line of a table or key; `errors`: `ConfigError` of `Problem` s.
- `settings`: `Settings`, the validated configuration; `loading`: `load`, `reload`,
  `environment` (the process environment over ``~/.hydramcp/.env``).
- `check`: `require_keys`, `client_keys` (HYDRA_PROXY_KEYS), `startup_problems` /
  `check_startup` (every check a start and a reload run), `check_port_free`,
  `models_listing`, `not_found_message`, `describe` (what ``hydra-proxy config check``
  prints).
- `web`: the syntax of ``allowed_hosts`` and ``allowed_origins``.

What the server calls (all pure but `check_port_free` and the loaders):

- CLI, before serving: ``settings = load(flags, environment())``; ``check_startup(settings,
  os.environ)`` and ``require_keys(settings)`` (raise ConfigError; the latter returns
  warnings to log); ``check_port_free(host, port)`` (None or the message to print, exit 2).
- Per worker, at startup: ``pools = key_pools(settings.providers)`` (mutable, one per
  process).
- Per request: ``traits = request_traits(canonical_request, client="anthropic" | "chat" |
  "responses", headers=scope["headers"])``; ``decision = settings.decide(traits)``; None
  -> 404 ``not_found_error`` with ``not_found_message(settings, model)``. Else for each
  ``attempt`` in ``decision.attempts`` (provider, model, options; ``attempt.max_tokens_limit``
  the clamp, ``attempt.options.map_effort(traits.effort)`` the effort to send,
  ``decision.reported_model`` the name to report): ``key = pools[name].acquire(now)`` (None:
  ``pools[name].soonest(now)`` gives the retry-after, or move to the next attempt), send,
  ``pools[name].report(key, status, retry_after, now)``, and move on only while
  ``should_fall_back(status)`` (None for a connect error or timeout) and nothing has been
  sent to the client. ``decision.label`` names the route in the access log.
- ``GET /v1/models``: ``models_listing(settings)`` (id, provider, context_window,
  max_output), shaped per client.
- SIGHUP: ``new = reload(None, settings)`` (every startup check again; ConfigError: log
  it, keep the old settings), then swap atomically; the workers respawn with new pools.
- The usage ledger: ``settings.pricing`` is the ``pricing_overrides`` of
  ``UsageService.start``.

The config file is optional TOML (docs/CONFIG.md is the reference)::

    [server]
    port = 3456

    [providers.deepseek]                 # starts from the shipped deepseek preset
    api_key_env = ["DEEPSEEK_KEY_1", "DEEPSEEK_KEY_2"]   # a key pool

    [[routes]]
    match = "claude-*haiku*"             # glob on the requested model name
    provider = "deepseek"
    model = "deepseek-chat"              # upstream model; unset: the requested name
    spoof_model = "claude-haiku-4-5"     # name reported back to Anthropic clients
    fallback = ["openrouter"]            # tried on connect errors, timeouts, 429, 5xx
"""

from __future__ import annotations

from .check import (
    ModelInfo,
    check_port_free,
    check_startup,
    client_keys,
    describe,
    models_listing,
    needed_providers,
    not_found_message,
    require_keys,
    startup_problems,
)
from .errors import ConfigError, Problem
from .keys import Key, KeyPool, key_pools, mask, parse_retry_after
from .loading import (
    CONFIG_ENV,
    PROXY_KEYS_ENV,
    builtin_providers,
    default_dotenv_path,
    environment,
    load,
    read_dotenv,
    reload,
)
from .presets import presets
from .protocols import PROTOCOLS, ProtocolName
from .providers import Provider
from .routes import (
    Attempt,
    ChainLink,
    RequestTraits,
    Route,
    RouteDecision,
    RouteOptions,
    request_traits,
    should_fall_back,
)
from .settings import DEFAULT_PORT, Settings

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_PORT",
    "PROTOCOLS",
    "PROXY_KEYS_ENV",
    "Attempt",
    "ChainLink",
    "ConfigError",
    "Key",
    "KeyPool",
    "ModelInfo",
    "Problem",
    "ProtocolName",
    "Provider",
    "RequestTraits",
    "Route",
    "RouteDecision",
    "RouteOptions",
    "Settings",
    "builtin_providers",
    "check_port_free",
    "check_startup",
    "client_keys",
    "default_dotenv_path",
    "describe",
    "environment",
    "key_pools",
    "load",
    "mask",
    "models_listing",
    "needed_providers",
    "not_found_message",
    "parse_retry_after",
    "presets",
    "read_dotenv",
    "reload",
    "request_traits",
    "require_keys",
    "should_fall_back",
    "startup_problems",
]
