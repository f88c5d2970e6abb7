"""What a running server needs checked and listed: provider keys, client keys, the
exposure of the bind address, the signing key, the port, the routable model names, and the
report `hydra-proxy config check` prints. All pure but the port test and the signing key
(read, or created on first use).

`startup_problems` is every check a start runs besides the port: `hydra-proxy serve` runs
it before binding, and a SIGHUP reload runs it on the new settings (one failing keeps the
running settings).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import ConfigError, Problem
from .keys import mask
from .loading import PROXY_KEYS_ENV
from .overlay import Overlay, from_overlay
from .providers import Provider
from .routes import Route
from .settings import Settings


def needed_providers(settings: Settings) -> dict[str, tuple[str, tuple[str | int, ...]]]:
    """Every provider a request can reach: who sends requests to it first, and where in
    the file that is."""
    needed: dict[str, tuple[str, tuple[str | int, ...]]] = {}
    for index, route in enumerate(settings.routes):
        label = f"route {route.name!r}" if route.name else f"[[routes]] #{index + 1}"
        for target in route.chain:
            needed.setdefault(target.provider, (label, ("routes", index, "provider")))
    if settings.default_reachable():
        needed.setdefault(
            settings.target_provider, ("requests no route claims", ("server", "provider"))
        )
    return needed


def require_keys(settings: Settings) -> list[str]:
    """ConfigError for each provider a request can reach that has no key, unless it needs
    none (a keyless preset such as ollama or vllm, or ``api_key_optional = true``).

    The target provider by default (openai, not chosen) is only warned about: a config
    whose routes name every provider it uses should not need an OpenAI key. Returns those
    warnings for the caller to log.
    """
    if settings.key_passthrough:  # every request brings its own key
        return []
    problems: list[Problem] = []
    warnings: list[str] = []
    lines = dict(settings.lines)
    for name, (user, path) in needed_providers(settings).items():
        provider = settings.providers[name]
        if not provider.needs_key or provider.api_keys():
            continue
        implicit = name == settings.target_provider and not settings.target_chosen
        if implicit and not any(name in (t.provider for t in r.chain) for r in settings.routes):
            names = " or ".join(provider.api_key_envs) or "its key"
            warnings.append(
                f"requests no route claims go to the default provider {name!r}, but {names} "
                "is not set: they will fail upstream. Set it, or choose the provider for "
                "them with --provider or [server] provider"
            )
            continue
        line = lines.get(("providers", name)) or lines.get(path) or lines.get(path[:-1])
        file = settings.config_file if line is not None else None
        if settings.overlay_version and any(
            from_overlay(settings.overlay, p) for p in (("providers", name), path)
        ):
            file, line = Overlay(settings.overlay_version).where, None
        optional = f"if it needs no key, set api_key_optional = true in [providers.{name}]"
        if not provider.api_key_envs:
            problems.append(
                Problem(
                    f"provider {name!r} (used by {user}) has no api_key_env: requests would "
                    "go upstream without a key",
                    file,
                    line,
                    f'add api_key_env = "{name.upper()}_API_KEY" to [providers.{name}] and set '
                    f"that variable; {optional}",
                )
            )
            continue
        names = " or ".join(provider.api_key_envs)
        problems.append(
            Problem(
                f"provider {name!r} (used by {user}) has no key: {names} is not set",
                file,
                line,
                f"export {provider.api_key_envs[0]}=... (or put it in ~/.hydramcp/.env); "
                + optional,
            )
        )
    if problems:
        raise ConfigError(problems)
    return warnings


def client_keys(environ: Mapping[str, str]) -> tuple[bytes, ...]:
    """The client keys of HYDRA_PROXY_KEYS (comma-separated; none when unset). An entry that
    is empty (``","``, or ``"$A,$B"`` with a variable unset) is a ConfigError: the server
    would otherwise run with fewer keys than meant, or none, and answer without a key."""
    raw = environ.get(PROXY_KEYS_ENV)
    if raw is None:
        return ()
    entries = [entry.strip() for entry in raw.split(",")]
    empty = [str(i + 1) for i, entry in enumerate(entries) if not entry]
    if empty:
        where = "it is empty" if len(entries) == 1 else f"entry {', '.join(empty)} is empty"
        raise ConfigError(
            Problem(
                f"{PROXY_KEYS_ENV} is set but {where} (of {len(entries)}, comma-separated)",
                hint=f"give every client key, e.g. {PROXY_KEYS_ENV}=key-one,key-two; unset "
                "the variable to run without client keys (loopback only)",
            )
        )
    return tuple(entry.encode() for entry in entries)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def startup_problems(settings: Settings, environ: Mapping[str, str]) -> list[Problem]:
    """Every problem that stops a start (the port aside): client keys, key passthrough
    beside them, a public bind without them, a short admin key, the optional parts the
    settings need, the signing key, the transducers."""
    from ..signing_key import SigningKeyError, load_signing_key
    from ..transducers import select
    from .extras import missing_extras

    problems: list[Problem] = [*admin_key_problems(environ), *missing_extras(settings)]
    try:
        keys = client_keys(environ)
    except ConfigError as exc:
        problems.extend(exc.problems)
        keys = ()
    if settings.key_passthrough and keys:
        problems.append(
            Problem(
                f"key_passthrough and {PROXY_KEYS_ENV} exclude each other (the key a client "
                "sends would be both a proxy key and its provider key); use one"
            )
        )
    if settings.key_passthrough and not problems:
        from ..team.service import configured

        if configured(settings, environ):
            problems.append(
                Problem(
                    "key_passthrough and named keys exclude each other (a named key's "
                    "limits would not hold for keys sent upstream); use one",
                    hint="revoke the keys (hydra-proxy keys), or turn key_passthrough off",
                )
            )
    # With key passthrough a client reaches an upstream only with its own key.
    exposed = not is_loopback(settings.host) and not settings.key_passthrough
    if exposed and not keys and not settings.insecure_no_auth and not problems:
        from ..team.service import configured  # named keys guard the proxy as well

        exposed = not configured(settings, environ)
    if exposed and not keys and not settings.insecure_no_auth and not problems:
        problems.append(
            Problem(
                f"refusing to listen on {settings.host} without {PROXY_KEYS_ENV} (clients "
                "would reach your provider keys)",
                hint="set client keys, or pass --insecure-no-auth",
            )
        )
    if settings.identity.get("jwks"):
        try:
            import jwt.algorithms

            if not jwt.algorithms.has_crypto:
                raise ImportError("cryptography is missing")
        except ImportError as exc:
            problems.append(
                Problem(
                    f"[identity] needs PyJWT with cryptography ({exc})",
                    hint="pip install 'hydra-proxy[identity]'",
                )
            )
    try:
        load_signing_key(settings.signing_key_file)
    except SigningKeyError as exc:
        problems.append(Problem(str(exc), hint="signing_key_file / HYDRA_SIGNING_KEY_FILE"))
    try:
        select(settings.implementation)
    except ImportError as exc:
        problems.append(
            Problem(
                f"the native transducers cannot load ({exc})",
                hint="use --impl python or HYDRA_PROXY_IMPL=auto",
            )
        )
    return problems


# A key the admin API is reached with: guessing 24 characters is impractical even at the
# rate a worker lets failed attempts through (team/service.py).
MIN_ADMIN_KEY_CHARS = 24


def admin_key_problems(environ: Mapping[str, str]) -> list[Problem]:
    from ..team.service import ADMIN_KEY_ENV

    key = environ.get(ADMIN_KEY_ENV, "").strip()
    if not key or len(key) >= MIN_ADMIN_KEY_CHARS:
        return []
    return [
        Problem(
            f"{ADMIN_KEY_ENV} is {len(key)} characters: an admin key needs at least "
            f"{MIN_ADMIN_KEY_CHARS}",
            hint="make one: python -c 'import secrets; print(secrets.token_urlsafe(32))'",
        )
    ]


def check_startup(settings: Settings, environ: Mapping[str, str]) -> None:
    """ConfigError listing `startup_problems`, if any."""
    problems = startup_problems(settings, environ)
    if problems:
        raise ConfigError(problems)


def check_port_free(host: str, port: int) -> str | None:
    """None when `port` on `host` can be listened on, else why not.

    Binds with SO_REUSEADDR as granian's listener does (so a socket in TIME_WAIT does not
    count), but never SO_REUSEPORT: a second process could then share the port with a
    running one and take half of its connections.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot listen on {host}: {exc.strerror}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
            sock.listen(1)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (
                    f"port {port} on {host} is already in use (another hydra-proxy?): "
                    "stop it or choose another port with --port or HYDRA_PROXY_PORT"
                )
            if exc.errno == errno.EACCES:
                return f"no permission to listen on port {port} on {host}: choose a port above 1023"
            return f"cannot listen on port {port} on {host}: {exc.strerror or exc}"
    return None


@dataclass(frozen=True)
class ModelInfo:
    """A routable model name, for the model listings (GET /v1/models)."""

    id: str
    provider: str
    context_window: int | None = None
    max_output: int | None = None
    model: str | None = None  # the upstream model the name reaches (None: the name itself)
    kind: str = "chat"  # the provider's kind
    reasoning: bool = False  # the upstream takes a reasoning effort or thinking
    vision: bool = True  # the upstream reads images


def models_listing(settings: Settings) -> list[ModelInfo]:
    """Every name a client can ask for by name: each route's reported name (its spoof name,
    else its model, else its glob when that has no wildcard) and its aliases, and the
    target provider's. Context window and max output from the route, else its provider,
    where known."""
    out: dict[str, ModelInfo] = {}

    def add(name: str | None, route: Route, provider: Provider) -> None:
        if not name or any(c in name for c in "*?[") or name in out:
            return
        out[name] = ModelInfo(
            name,
            provider.name,
            route.context_window or provider.context_window,
            route.max_output
            or route.max_tokens_limit
            or provider.max_output
            or provider.max_tokens_limit,
            model=route.model or (None if name == route.spoof_model else name),
            kind=provider.kind,
            reasoning=provider.reasoning
            or provider.kind != "chat"
            or provider.effort_form not in (None, "none"),
            vision=route.vision if route.vision is not None else provider.vision,
        )

    routes = [*settings.routes]
    if settings.target_provider in settings.providers:
        routes.append(settings.default_route)
    for route in routes:
        provider = settings.providers[route.provider]
        if route.conditional:
            continue  # reached by traits, not by a name a client picks
        for name in (route.spoof_model, route.model, route.match):
            add(name, route, provider)
            if name is not None:
                break
        for alias in route.aliases:
            add(alias, route, provider)
    return sorted(out.values(), key=lambda m: m.id)


def not_found_message(settings: Settings, model: str) -> str:
    """The not_found_error message for a name nothing routes: what IS routable."""
    names = [m.id for m in models_listing(settings)]
    globs = [r.match for r in settings.routes if any(c in r.match for c in "*?[")]
    parts = []
    if names:
        parts.append("models: " + ", ".join(names))
    if globs:
        parts.append("patterns: " + ", ".join(dict.fromkeys(globs)))
    routable = "; ".join(parts) if parts else "nothing (configure [[routes]] or --provider)"
    return f"model: no route for model {model!r}; routable {routable}"


def describe_keys(provider: Provider) -> str:
    keys = provider.api_keys()
    if not keys:
        if not provider.needs_key:
            return "no key needed"
        return "NOT SET (" + " or ".join(provider.api_key_envs or ("no api_key_env",)) + ")"
    if len(keys) == 1:
        var, value = keys[0]
        return f"{var} set ({mask(value)})"
    return f"set ({len(keys)} keys: " + ", ".join(f"{v} {mask(k)}" for v, k in keys) + ")"


def describe(settings: Settings) -> str:
    """The resolved routes and providers, keys masked, as `config check` prints them."""
    lines = [f"config: {settings.config_file or '(no file)'}"]
    if settings.overlay_version:
        lines.append(
            f"live config: v{settings.overlay_version} over the file "
            f"({', '.join(sorted(settings.overlay)) or 'empty'}; GET /admin/config)"
        )
    lines.append(f"listen: http://{settings.host}:{settings.port} ({settings.workers} worker(s))")
    lines.append("admission: " + _admission_text(settings))
    if settings.redis_url:
        lines.append("cluster: " + _cluster_text(settings))
    lines.append("routes (first match wins):")
    for index, route in enumerate(settings.routes):
        lines.append(f"  {index + 1}. {_route_text(route)}")
    default = settings.default_route
    state = "" if settings.default_reachable() else " (unreachable: a '*' route claims everything)"
    lines.append(f"  default: {_route_text(default)}{state}")
    lines.append("providers:")
    needed = needed_providers(settings)
    configured = {p[1] for p, _ in settings.lines if len(p) == 2 and p[0] == "providers"}
    for name, provider in sorted(settings.providers.items()):
        if name not in needed and name not in configured:
            continue
        extras = _provider_extras(provider, name)
        used = f", used by {needed[name][0]}" if name in needed else ", unused"
        lines.append(
            f"  {name}: {provider.kind} {provider.base_url}; key: {describe_keys(provider)}{used}"
            + (f"; {', '.join(extras)}" if extras else "")
        )
    return "\n".join(lines)


def _cluster_text(settings: Settings) -> str:
    """Where the shared counters live and what an outage does, in a line."""
    from ..cluster.failover import mask_url

    assert settings.redis_url
    where = mask_url(settings.redis_url)
    if settings.sentinels:
        where = f"the primary {settings.sentinel_service!r} of Sentinel(s) " + ", ".join(
            settings.sentinels
        )
    elif settings.redis_cluster:
        where = f"the Redis Cluster of {where}"
    return (
        f"{where}, leases of {settings.lease_ttl:g} s, "
        f"Redis unreachable after {settings.redis_timeout:g} s: {settings.on_store_failure}"
    )


def _provider_extras(provider: Provider, name: str) -> list[str]:
    """A provider's settings that differ from its kind's defaults, as `config check` names
    them."""
    extras = [f"preset {provider.preset}"] if provider.preset and provider.preset != name else []
    for column in ("reasoning", "replay_reasoning"):
        if getattr(provider, column):
            extras.append(column)
    if provider.reasoning_field:
        extras.append(f"reasoning_field={provider.reasoning_field}")
    if provider.max_tokens_field != "max_tokens":
        extras.append(provider.max_tokens_field)
    if not provider.sampling:
        extras.append("no sampling")
    for column in ("max_tokens_limit", "context_window", "max_output"):
        if getattr(provider, column):
            extras.append(f"{column}={getattr(provider, column)}")
    return extras


def _admission_text(settings: Settings) -> str:
    """The [admission] bounds in a line (for every worker, and with Redis every replica)."""
    overrides = dict(settings.provider_stream_overrides)
    if not (settings.provider_streams or settings.key_streams or any(overrides.values())):
        return "unbounded"
    parts = []
    per_provider = str(settings.provider_streams or "unbounded")
    if overrides:
        per_provider += (
            " (" + ", ".join(f"{k} {v or 'unbounded'}" for k, v in overrides.items()) + ")"
        )
    parts.append(f"{per_provider} streams per provider")
    parts.append(f"{settings.key_streams or 'unbounded'} per client key")
    return (
        ", ".join(parts)
        + (", across replicas (redis)" if settings.redis_url else ", across the workers")
        + f"; queue {settings.queue_timeout:g} s, {settings.queue_depth} deep;"
        + f" a full provider: {settings.when_full}"
    )


def _route_text(route: object) -> str:
    from .routes import Route

    assert isinstance(route, Route)
    conditions = [f"model {route.match}"]
    for name in ("background", "thinking", "images", "subagent", "server_tools"):
        value = getattr(route, name)
        if value is not None:
            conditions.append(name if value else f"not {name}")
    if route.long_context is not None:
        conditions.append(f"input > {route.long_context} tokens")
    if route.client is not None:
        conditions.append(f"{route.client} client")
    chain = " -> ".join(
        f"{t.provider}:{t.model or route.model or '(requested name)'}" for t in route.chain
    )
    options = []
    if route.spoof_model:
        options.append(f"reported as {route.spoof_model}")
    if route.max_tokens_limit:
        options.append(f"max_tokens <= {route.max_tokens_limit}")
    if route.effort:
        options.append(f"effort {route.effort}")
    if route.effort_map:
        options.append("effort " + ", ".join(f"{a}->{b}" for a, b in route.effort_map))
    label = f"[{route.name}] " if route.name else ""
    return f"{label}{' and '.join(conditions)} => {chain}" + (
        f" ({'; '.join(options)})" if options else ""
    )
