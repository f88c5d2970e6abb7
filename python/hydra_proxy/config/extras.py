"""The optional parts a configuration needs, checked before the proxy listens: a setting
that needs an extra that is not installed is one line naming the extra to install (its
workers would otherwise start listening and then die importing it)."""

from __future__ import annotations

from importlib import import_module

from .errors import Problem
from .settings import Settings

# extra -> the module it installs that the proxy imports.
_MODULES = {"cluster": "hiredis", "postgres": "psycopg", "otel": "opentelemetry.sdk"}


def _installed(module: str) -> bool:
    """Whether `module` imports (once per start; only for a setting that needs it)."""
    try:
        import_module(module)
    except ImportError:
        return False
    return True


def needed(settings: Settings) -> dict[str, str]:
    """Each extra the settings need, with the setting that needs it."""
    found: dict[str, str] = {}
    if settings.redis_url:
        found["cluster"] = "[cluster] redis_url"
    ledger = settings.usage_ledger or ""
    if ledger.startswith(("postgresql://", "postgres://")):
        found["postgres"] = "a postgresql:// usage_ledger"
    if settings.usage_tracing:
        found["otel"] = "usage_tracing"
    return found


def missing_extras(settings: Settings) -> list[Problem]:
    return [
        Problem(f"{why} needs the optional part {extra!r}: pip install 'hydra-proxy[{extra}]'")
        for extra, why in needed(settings).items()
        if not _installed(_MODULES[extra])
    ]
