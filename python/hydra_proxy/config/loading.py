"""Loading settings from their sources, and reloading them.

Precedence: CLI flag > environment > ``~/.hydramcp/.env`` > config file > default. The
``.env`` file (KEY=VALUE lines) is read as a layer just below the process environment, for
every variable read here (provider keys by their ``api_key_env`` names, ``HYDRA_*``
settings); it is never written into ``os.environ``. ``HYDRA_PROXY_KEYS`` (client
authentication) is read from the process environment only, so the server and the CLI's
bind check agree on it; a value found only in the file is reported, not used.

A provider key is read from the process environment when it is used; a key only the
``.env`` file holds is kept on the `Provider` (never shown in its repr).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError, Problem
from .overlay import Overlay, merge, shape_problems
from .presets import preset_row, presets
from .providers import Provider, build_provider
from .routes import Route
from .schema import ADMISSION, CLUSTER, IDENTITY, SERVER, USAGE, Field, did_you_mean
from .settings import DEFAULT_LEDGER, DEFAULT_PORT, Settings
from .source import SourceMap
from .validate import Validator, list_problem, read_config, type_ok

log = logging.getLogger("hydra_proxy.config")

PROXY_KEYS_ENV = "HYDRA_PROXY_KEYS"
CONFIG_ENV = "HYDRA_CONFIG"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")
# [server] keys a restart is needed for (the listening socket and the process count).
RESTART_ONLY = ("host", "port", "workers")


def default_dotenv_path() -> Path:
    return Path.home() / ".hydramcp" / ".env"


def read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of the seed's ~/.hydramcp/.env (comments, `export`, quotes allowed)."""
    values: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return values
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def environment(
    process_env: Mapping[str, str] | None = None, dotenv: Path | None = None
) -> dict[str, str]:
    """The variables settings are read from: the process environment (default `os.environ`)
    over the ``.env`` file (default `default_dotenv_path`). Nothing is written anywhere."""
    process_env = os.environ if process_env is None else process_env
    from_file = read_dotenv(dotenv if dotenv is not None else default_dotenv_path())
    if PROXY_KEYS_ENV in from_file and PROXY_KEYS_ENV not in process_env:
        log.warning(
            "%s in the .env file is not used: set it in the environment to require client keys",
            PROXY_KEYS_ENV,
        )
    from_file.pop(PROXY_KEYS_ENV, None)
    return {**from_file, **process_env}


def builtin_providers(env: Mapping[str, str]) -> dict[str, Provider]:
    """Every shipped preset as a provider of the same name."""
    providers = {}
    for name in presets():
        row = preset_row(name)
        assert row is not None
        providers[name] = build_provider(name, row, env)
    return providers


def _convert(text: str, spec: Field) -> Any:
    """A variable's or flag's text as the key's type (ValueError: it is not one)."""
    kind = spec.types[0]
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError
    if kind is int:
        return int(text.strip())
    if kind is float:
        return float(text.strip())
    if kind is list:  # a variable's list: comma-separated
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def _section(document: dict[str, Any], name: str) -> dict[str, Any]:
    """A table of the file (checked by the Validator: a wrong type is its problem, not a
    crash here), or an empty one."""
    table = document.get(name, {})
    return table if isinstance(table, dict) else {}


def _server_values(
    given: dict[str, Any], env: Mapping[str, str], server_cfg: dict[str, Any], check: Validator
) -> dict[str, Any]:
    """The [server] settings: a flag, else a variable, else the file's value."""
    values: dict[str, Any] = {}
    for key, spec in SERVER.items():
        outside = _flag_or_variable(key, spec, given, env)
        if outside is None:
            if key in server_cfg:
                values[key] = server_cfg[key]  # checked by check.server
            continue
        raw, origin = outside
        ok, value = _checked_flag(key, spec, raw, origin, check.problems)
        if not ok:
            continue
        problem = list_problem(key, value)
        if problem is not None:
            check.problems.append(Problem(f"{origin}: {problem}"))
            continue
        values[key] = value
    return values


def load(
    flags: dict[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    overlay: Overlay | None = None,
) -> Settings:
    """Build Settings from CLI flags (None = not given), the variables (default:
    `environment()`, the process environment over ~/.hydramcp/.env) and the config file,
    with the live config's `overlay` over the file (config.overlay).

    Raises ConfigError listing every problem, each with its file and line (or the
    variable or flag it came from) and what to do.
    """
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    if env is None:
        env = environment()

    config_path = given.get("config") or env.get(CONFIG_ENV)
    document: dict[str, Any] = {}
    source: SourceMap | None = None
    if config_path:
        document, source = read_config(str(config_path))
    check = Validator(str(config_path) if config_path else None, source)
    if overlay is not None and overlay.document:
        shape = shape_problems(overlay.document)
        if shape:
            raise ConfigError(shape)
        document = merge(document, overlay.document)
        check.overlay = overlay
    check.top_level(document)
    server_cfg = _section(document, "server")
    check.server(server_cfg)
    providers = check.providers(_section(document, "providers"), env)
    route_entries = document.get("routes", [])
    routes = check.routes(route_entries if isinstance(route_entries, list) else [], providers)
    pricing = check.pricing(_section(document, "pricing"))
    usage_cfg = _section(document, "usage")
    check.usage(usage_cfg)
    ledger = env.get(USAGE["ledger"].env or "") or usage_cfg.get("ledger") or DEFAULT_LEDGER
    admission_cfg = _section(document, "admission")
    stream_overrides = check.admission(admission_cfg, providers)
    admission = _layered(ADMISSION, ("providers",), given, env, admission_cfg, check.problems)
    cluster = _cluster(document, given, env, check)
    identity = dict(_section(document, "identity"))
    jwks = env.get(IDENTITY["jwks"].env or "") or identity.get("jwks")
    check.identity(identity, jwks if isinstance(jwks, str) else None)
    if jwks:
        identity["jwks"] = jwks

    values = _server_values(given, env, server_cfg, check)
    target_provider = str(values.get("provider", "openai"))
    if target_provider not in providers:
        origin = _origin(given, env, "provider")
        close = did_you_mean(target_provider, providers)
        check.problems.append(
            Problem(
                f"{origin}: unknown provider {target_provider!r}",
                check.file if origin.startswith("[server]") else None,
                check.line(("server", "provider")) if origin.startswith("[server]") else None,
                (f"did you mean {close!r}? " if close else "")
                + f"known: {', '.join(sorted(providers))}",
            )
        )
    check.raise_if_any()

    base_url = given.get("base_url")
    if base_url:
        providers[target_provider] = dataclasses.replace(
            providers[target_provider], base_url=base_url
        )
    if values.get("passthrough"):
        routes.append(Route("claude-*", "anthropic", name="passthrough"))

    limits = {
        k: values[k]
        for k in (
            "max_body_bytes", "max_event_bytes", "connect_timeout", "first_byte_timeout",
            "idle_timeout", "ping_interval", "retries", "shutdown_grace", "body_timeout",
            "max_json_depth", "send_stall_timeout", "session_reuse_bytes",
        )
        if k in values
    }  # fmt: skip
    return Settings(
        host=str(values.get("host", "127.0.0.1")),
        port=int(values.get("port", DEFAULT_PORT)),
        workers=int(values.get("workers", 1)),
        target_provider=target_provider,
        target_chosen="provider" in values,
        target_model=values.get("model"),
        spoof_model=values.get("spoof_model"),
        providers=providers,
        routes=tuple(routes),
        implementation=str(values.get("implementation", "auto")),
        insecure_no_auth=bool(given.get("insecure_no_auth", False)),
        key_passthrough=bool(values.get("key_passthrough", False)),
        signing_key_file=_signing_key_files(values.get("signing_key_file")),
        allowed_hosts=tuple(values.get("allowed_hosts", ())),
        allowed_origins=tuple(values.get("allowed_origins", ())),
        continuation=str(values.get("continuation", "auto")).lower(),
        session_headers=tuple(h.strip().lower() for h in values.get("session_headers", ())),
        pricing=pricing,
        usage_ledger=None if str(ledger).lower() == "off" else str(ledger),
        usage_metrics=bool(usage_cfg.get("metrics", True)),
        usage_tracing=bool(usage_cfg.get("tracing", False)),
        provider_stream_overrides=tuple(sorted(stream_overrides.items())),
        **admission,
        **cluster,
        identity=identity,
        overlay=overlay.document if overlay is not None else {},
        overlay_version=overlay.version if overlay is not None else 0,
        config_file=str(config_path) if config_path else None,
        lines=tuple(source.lines.items()) if source is not None else (),
        flags=tuple(sorted((k, v) for k, v in given.items() if k != "config")),
        **limits,
    )


def _signing_key_files(value: Any) -> str | tuple[str, ...] | None:
    return tuple(value) if isinstance(value, list) else value


def _cluster(
    document: Mapping[str, Any], given: Mapping[str, Any], env: Mapping[str, str], check: Validator
) -> dict[str, Any]:
    """`[cluster]`'s values by precedence, checked (problems added to `check`)."""
    cluster_cfg = document.get("cluster", {})
    cluster_cfg = cluster_cfg if isinstance(cluster_cfg, dict) else {}
    check.cluster(cluster_cfg)
    cluster = _layered(CLUSTER, (), given, env, cluster_cfg, check.problems)
    if "on_store_failure" in cluster:
        cluster["on_store_failure"] = str(cluster["on_store_failure"]).lower()
    for key in ("lease_ttl", "redis_timeout"):
        if key in cluster:
            cluster[key] = float(cluster[key])
    if "sentinels" in cluster:
        cluster["sentinels"] = tuple(str(s) for s in cluster["sentinels"])
    if cluster.get("sentinels") and not cluster.get("sentinel_service"):
        check.problems.append(
            Problem(
                "[cluster] sentinels: no sentinel_service names the primary",
                check.file,
                check.line(("cluster", "sentinels")),
                'add sentinel_service = "mymaster" (the name in the Sentinels\' monitor line)',
            )
        )
    elif cluster.get("sentinels") and not cluster.get("redis_url"):
        cluster["redis_url"] = "redis://" + str(cluster["sentinel_service"])
    url = cluster.get("redis_url")
    if url is not None and not str(url).startswith(("redis://", "rediss://")):
        cluster.pop("redis_url")
        where = "HYDRA_REDIS_URL" if env.get("HYDRA_REDIS_URL") else "[cluster] redis_url"
        check.problems.append(
            Problem(
                f"{where}: not a Redis URL",
                check.file if where.startswith("[") else None,
                check.line(("cluster", "redis_url")) if where.startswith("[") else None,
                "use redis://HOST:6379/0 (rediss:// for TLS; a password as redis://:PASSWORD@HOST)",
            )
        )
    return cluster


def _layered(
    table: Mapping[str, Field],
    skip: tuple[str, ...],
    given: Mapping[str, Any],
    env: Mapping[str, str],
    file_table: Mapping[str, Any],
    problems: list[Problem],
) -> dict[str, Any]:
    """A table's values by precedence (flag > variable > file; unset keys left out): a
    file's value was checked by the Validator, a flag's or variable's is checked here."""
    values: dict[str, Any] = {}
    for key, spec in table.items():
        if key in skip:
            continue
        outside = _flag_or_variable(key, spec, given, env)
        if outside is None:
            table_value = file_table.get(key)
            if (
                key in file_table
                and type_ok(table_value, spec)
                and _flag_ok(key, table_value, spec)
            ):
                values[key] = table_value
            continue
        ok, value = _checked_flag(key, spec, *outside, problems)
        if ok:
            values[key] = value
    return values


def _flag_or_variable(
    key: str, spec: Field, given: Mapping[str, Any], env: Mapping[str, str]
) -> tuple[Any, str] | None:
    """The raw value a flag (first) or an environment variable gives a key, and its origin
    as a problem names it; None when neither does."""
    if key in given:
        return given[key], f"--{key.replace('_', '-')}"
    if spec.env and env.get(spec.env):
        return env[spec.env], spec.env
    return None


def _checked_flag(
    key: str, spec: Field, raw: Any, origin: str, problems: list[Problem]
) -> tuple[bool, Any]:
    """A flag's or variable's value converted from text and checked: (True, value), or
    (False, None) with the problem added."""
    value = raw
    if isinstance(raw, str) and spec.types[0] is not str:
        try:
            value = _convert(raw, spec)
        except ValueError:
            problems.append(_flag_problem(origin, key, raw, spec, bad_type=True))
            return False, None
    if not type_ok(value, spec) or not _flag_ok(key, value, spec):
        problems.append(_flag_problem(origin, key, raw, spec))
        return False, None
    return True, value


def _origin(given: Mapping[str, Any], env: Mapping[str, str], key: str) -> str:
    outside = _flag_or_variable(key, SERVER[key], given, env)
    return f"[server] {key}" if outside is None else outside[1]


def _flag_ok(key: str, value: Any, spec: Field) -> bool:
    if spec.choices and str(value).lower() not in spec.choices:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return spec.in_range(key, value)
    return True


def _flag_problem(
    origin: str, key: str, raw: Any, spec: Field, *, bad_type: bool = False
) -> Problem:
    shown = f"{origin}={raw}" if not origin.startswith("--") else f"{origin} {raw}"
    if spec.choices:
        return Problem(f"{shown}: not a valid {key}", hint=f"use one of {', '.join(spec.choices)}")
    if bad_type and spec.types[0] is bool:
        return Problem(f"{shown}: {key} must be true or false", hint="use true/false, 1/0, yes/no")
    return Problem(
        f"{shown}: {key} {spec.range_text(key) if spec.minimum is not None else 'must be ' + spec.type_name}"
    )


def _stored_overlay(new: Settings, current: Settings) -> Overlay:
    """The live config in the key store of `new` (team.live_config); the one in force when
    the store cannot be read, so that a store away does not drop it."""
    from ..team import live_config

    try:
        found = live_config.read(new.usage_ledger)
    except Exception as exc:  # the store away
        log.warning("config reload: cannot read the live config (%s): keeping v%d", exc,
                    current.overlay_version)  # fmt: skip
        return Overlay(current.overlay_version, current.overlay)
    return found if found is not None else Overlay()


def reload(path: str | None, current: Settings, env: Mapping[str, str] | None = None) -> Settings:
    """The settings from a new config file (and the current variables and the CLI flags
    the server started with) with the stored live config over it, validated fully and through every startup check
    (`check.startup_problems`); ConfigError with the same messages as at start when
    anything is wrong, and then `current` stays in force.

    host, port and workers need a restart: a changed value is reported at WARNING and the
    current one kept.
    """
    from .check import check_startup, require_keys

    flags = dict(current.flags)
    if path is not None:
        flags["config"] = path
    elif current.config_file is not None:
        flags["config"] = current.config_file
    new = load(flags, env)
    overlay = _stored_overlay(new, current)
    if overlay.version:
        new = load(flags, env, overlay)
    for warning in require_keys(new):
        log.warning("config reload: %s", warning)
    kept = {k: getattr(current, k) for k in RESTART_ONLY if getattr(new, k) != getattr(current, k)}
    if kept:
        log.warning(
            "config reload: %s changed, which needs a restart; still using %s",
            ", ".join(kept),
            ", ".join(f"{k}={v}" for k, v in kept.items()),
        )
        new = dataclasses.replace(new, **kept)
    # Everything a start checks (client keys, a public bind without them, the signing key):
    # a reload that turns key_passthrough off must not leave a public bind without keys.
    check_startup(new, os.environ if env is None else env)
    return new
