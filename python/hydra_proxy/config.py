"""Settings: providers, routes, limits.

Precedence: CLI flag > environment > ``~/.hydramcp/.env`` > config file > default. The
``.env`` file (KEY=VALUE lines) is read as a layer just below the process environment, for
every variable read here (provider keys by their ``api_key_env`` name, ``HYDRA_*``
settings); it is never written into ``os.environ``. ``HYDRA_PROXY_KEYS`` (client
authentication) is read from the process environment only, so the server and the CLI's
bind check agree on it; a value found only in the file is reported, not used.

The config file is optional TOML::

    [server]
    port = 3456

    [providers.deepseek]
    kind = "openai"                      # speaks Chat Completions ("anthropic": Messages)
    base_url = "https://api.deepseek.com/v1"
    api_key_env = "DEEPSEEK_API_KEY"     # the key is read from this variable, never stored
    replay_reasoning = true              # needs reasoning_content back on tool turns
    reasoning = true                     # takes reasoning_effort
    max_tokens_field = "max_tokens"      # or "max_completion_tokens" (o-series, gpt-5)
    max_tokens_limit = 8192
    sampling = true                      # false: drop temperature/top_p (o-series, gpt-5)

    [[routes]]
    match = "claude-*haiku*"             # glob on the requested model name
    provider = "deepseek"
    model = "deepseek-chat"              # upstream model; unset: the requested name
    spoof_model = "claude-haiku-4-5"     # name reported back to Anthropic clients

Settings reach granian worker processes as the argument of the app loader
(server/run.py). A provider key is read from the process environment when it is used; a
key that only the ``.env`` file holds is kept on the `Provider` (never shown in its repr).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ProviderKind = Literal["openai", "anthropic"]

log = logging.getLogger(__name__)

SETTINGS_ENV = "HYDRA_PROXY_SETTINGS"
DEFAULT_PORT = 3456
PROXY_KEYS_ENV = "HYDRA_PROXY_KEYS"


@dataclass(frozen=True)
class Provider:
    name: str
    kind: ProviderKind
    base_url: str
    api_key_env: str | None = None
    # Chat-target quirks (see chat.request.writer.ChatTarget).
    reasoning: bool = False
    replay_reasoning: bool = False
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    max_tokens_limit: int | None = None
    # Takes temperature/top_p (o-series and GPT-5 reasoning models reject them).
    sampling: bool = True
    # The key `load` read where the process environment has none (the .env file).
    fallback_api_key: str | None = field(default=None, repr=False, compare=False)

    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if key is None:
            key = self.fallback_api_key
        return key or None


@dataclass(frozen=True)
class Route:
    match: str
    provider: str
    model: str | None = None
    spoof_model: str | None = None
    max_tokens_limit: int | None = None

    def matches(self, model: str) -> bool:
        return fnmatch.fnmatchcase(model, self.match)


def builtin_providers(env: Mapping[str, str]) -> dict[str, Provider]:
    return {
        "openai": Provider(
            "openai",
            "openai",
            env.get("HYDRA_OPENAI_BASE_URL", "https://api.openai.com/v1"),
            "OPENAI_API_KEY",
        ),
        "anthropic": Provider(
            "anthropic",
            "anthropic",
            env.get("HYDRA_ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            "ANTHROPIC_API_KEY",
        ),
        "gemini": Provider(
            "gemini",
            "openai",
            env.get(
                "HYDRA_GEMINI_BASE_URL",
                "https://generativelanguage.googleapis.com/v1beta/openai",
            ),
            "GEMINI_API_KEY",
            reasoning=True,
        ),
        "ollama": Provider(
            "ollama",
            "openai",
            env.get("HYDRA_OLLAMA_BASE_URL", "http://127.0.0.1:11434/v1"),
            None,
        ),
    }


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 1
    target_provider: str = "openai"
    target_model: str | None = None
    spoof_model: str | None = None
    providers: dict[str, Provider] = field(default_factory=dict)
    routes: tuple[Route, ...] = ()
    implementation: str = "auto"
    insecure_no_auth: bool = False
    # Limits and timeouts (seconds).
    max_body_bytes: int = 32 * 1024 * 1024
    max_event_bytes: int = 16 * 1024 * 1024
    connect_timeout: float = 10.0
    first_byte_timeout: float = 300.0
    idle_timeout: float = 300.0
    ping_interval: float = 10.0
    retries: int = 2
    shutdown_grace: float = 30.0
    signing_key_file: str | None = None
    # Continuation suffix for Chat clients: auto (clients known to replay reasoning, or the
    # x-hydra-continuation request header), always, never.
    continuation: str = "auto"

    def resolve(self, model: str) -> tuple[Provider, Route] | None:
        """The provider and route for a requested model name (None: nothing routes it)."""
        for route in self.routes:
            if route.matches(model):
                return self.providers[route.provider], route
        if self.target_provider in self.providers:
            route = Route("*", self.target_provider, self.target_model, self.spoof_model)
            return self.providers[self.target_provider], route
        return None

    # Used only by server.app.create_app, itself unused (granian gets a loader): remove both.
    @staticmethod
    def from_json(data: bytes | str) -> Settings:
        raw = orjson.loads(data)
        raw["providers"] = {k: Provider(**v) for k, v in raw["providers"].items()}
        raw["routes"] = tuple(Route(**r) for r in raw["routes"])
        return Settings(**raw)


class ConfigError(ValueError):
    """The configuration is invalid; the message says where."""


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


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


def load(flags: dict[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from CLI flags (None = not given), the variables (default:
    `environment()`, the process environment over ~/.hydramcp/.env) and the config file."""
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    if env is None:
        env = environment()

    file_cfg: dict[str, Any] = {}
    config_path = flags.get("config") or env.get("HYDRA_CONFIG")
    if config_path:
        try:
            file_cfg = tomllib.loads(Path(config_path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config file {config_path}: {exc}") from exc
    server_cfg: dict[str, Any] = file_cfg.get("server", {})

    def pick(flag: str, env_name: str | None, file_key: str | None, default: Any) -> Any:
        if flag in flags:
            return flags[flag]
        if env_name and env.get(env_name):
            return env[env_name]
        if file_key and file_key in server_cfg:
            return server_cfg[file_key]
        return default

    providers = builtin_providers(env)
    for name, raw in file_cfg.get("providers", {}).items():
        known = {f.name for f in dataclasses.fields(Provider)} - {"name", "fallback_api_key"}
        unknown = set(raw) - known
        if unknown:
            raise ConfigError(f"providers.{name}: unknown keys {sorted(unknown)}")
        base = providers.get(name)
        merged = {**(dataclasses.asdict(base) if base else {}), **raw, "name": name}
        if "kind" not in merged or "base_url" not in merged:
            raise ConfigError(f"providers.{name}: needs kind and base_url")
        if merged["kind"] not in ("openai", "anthropic"):
            raise ConfigError(f"providers.{name}.kind must be 'openai' or 'anthropic'")
        providers[name] = Provider(**merged)

    target_provider = str(pick("provider", "HYDRA_TARGET_PROVIDER", "provider", "openai"))
    if target_provider not in providers:
        raise ConfigError(
            f"unknown provider {target_provider!r}; known: {', '.join(sorted(providers))}"
        )
    base_url = flags.get("base_url")
    if base_url:
        providers[target_provider] = dataclasses.replace(
            providers[target_provider], base_url=base_url
        )

    routes: list[Route] = []
    for i, raw in enumerate(file_cfg.get("routes", [])):
        try:
            route = Route(**raw)
        except TypeError as exc:
            raise ConfigError(f"routes[{i}]: {exc}") from exc
        if route.provider not in providers:
            raise ConfigError(f"routes[{i}]: unknown provider {route.provider!r}")
        routes.append(route)
    if _truthy(str(pick("passthrough", "HYDRA_PASSTHROUGH", "passthrough", "false"))):
        routes.append(Route("claude-*", "anthropic"))
    # A key the process environment lacks (from the .env file) stays with its provider:
    # os.environ is not touched.
    for name, provider in providers.items():
        var = provider.api_key_env
        if var is not None and var in env and var not in os.environ:
            providers[name] = dataclasses.replace(provider, fallback_api_key=env[var])

    return Settings(
        host=str(pick("host", "HYDRA_PROXY_HOST", "host", "127.0.0.1")),
        port=int(pick("port", "HYDRA_PROXY_PORT", "port", DEFAULT_PORT)),
        workers=int(pick("workers", "HYDRA_PROXY_WORKERS", "workers", 1)),
        target_provider=target_provider,
        target_model=pick("model", "HYDRA_TARGET_MODEL", "model", None),
        spoof_model=pick("spoof_model", "HYDRA_SPOOF_MODEL", "spoof_model", None),
        providers=providers,
        routes=tuple(routes),
        implementation=str(pick("implementation", "HYDRA_PROXY_IMPL", "implementation", "auto")),
        insecure_no_auth=bool(flags.get("insecure_no_auth", False)),
        signing_key_file=pick(
            "signing_key_file", "HYDRA_SIGNING_KEY_FILE", "signing_key_file", None
        ),
        continuation=_continuation(
            pick("continuation", "HYDRA_CONTINUATION", "continuation", "auto")
        ),
        **_limits(env, server_cfg),
    )


# Limits settable from the environment (HYDRA_<NAME>) or the [server] table of the file.
_LIMITS: dict[str, type] = {
    "max_body_bytes": int,
    "max_event_bytes": int,
    "connect_timeout": float,
    "first_byte_timeout": float,
    "idle_timeout": float,
    "ping_interval": float,
    "retries": int,
    "shutdown_grace": float,
}


def _limits(env: Mapping[str, str], server_cfg: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, kind in _LIMITS.items():
        raw = env.get(f"HYDRA_{name.upper()}", server_cfg.get(name))
        if raw is None or raw == "":
            continue
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{name} (HYDRA_{name.upper()}) must be a number, not {raw!r}"
            ) from None
        if value < 0 or (value == 0 and name != "retries"):
            raise ConfigError(f"{name} (HYDRA_{name.upper()}) must be positive, not {raw!r}")
        values[name] = value
    return values


def _continuation(value: object) -> str:
    mode = str(value).strip().lower()
    if mode not in ("auto", "always", "never"):
        raise ConfigError(f"continuation must be auto, always or never, not {value!r}")
    return mode
