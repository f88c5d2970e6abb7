"""The live configuration's overlay on the config file: providers and routes set through
the admin API (``/admin/config``), kept in the key store's database and read by every
worker and replica that shares it.

The overlay is a document of the config file's own shape, limited to `OVERLAY_KEYS`:
``providers`` (each table merged key by key over the file's table of the same name, or a
new provider) and ``routes`` (the whole list, in place of the file's). The merged document
is validated as a file is, and goes through every check a start runs; a problem in what
the overlay set is reported against `LABEL` and the overlay's path, as a file's problem is
against its name and line. Everything here is pure: the store is `team.live_config`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import Problem
from .keys import mask
from .settings import Settings

OVERLAY_KEYS = ("providers", "routes")
LABEL = "live config"
MAX_OVERLAY_BYTES = 256 * 1024
OWN_VARIABLES = ("HYDRA_",)


@dataclass(frozen=True)
class Overlay:
    """A stored overlay: its version (0: none stored yet) and its document."""

    version: int = 0
    document: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """How problems name it, as a file's name: ``live config v3``."""
        return f"{LABEL} v{self.version}"


def shape_problems(document: Mapping[str, Any]) -> list[Problem]:
    """What is wrong with an overlay's outline (its contents are checked as a file's)."""
    problems = []
    for key, value in document.items():
        if key not in OVERLAY_KEYS:
            problems.append(
                Problem(
                    f"{LABEL}: {key!r} cannot be set live",
                    hint=f"the live config holds {' and '.join(OVERLAY_KEYS)}; the rest is "
                    "the file's (SIGHUP re-reads it)",
                )
            )
        elif key == "providers" and not (
            isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())
        ):
            problems.append(Problem(f"{LABEL}: providers must be a table of tables"))
        elif key == "providers":
            problems += _key_variable_problems(value)
        elif key == "routes" and not (
            isinstance(value, list) and all(isinstance(v, dict) for v in value)
        ):
            problems.append(Problem(f"{LABEL}: routes must be an array of tables"))
    return problems


def _key_variable_problems(providers: Mapping[str, Any]) -> list[Problem]:
    """The proxy's own variables (the admin key, the ledger's URL and its password...)
    cannot be made a provider's key live: they would go upstream, to any base_url."""
    problems = []
    for name, table in providers.items():
        for column in ("api_key_env", "api_keys_env"):
            value = table.get(column)
            names = value if isinstance(value, list) else [value]
            for var in names:
                if isinstance(var, str) and var.upper().startswith(OWN_VARIABLES):
                    problems.append(
                        Problem(
                            f"{LABEL}: providers.{name}.{column} names {var}, one of the "
                            "proxy's own variables, which never go upstream",
                            hint="name the variable that holds the provider's key",
                        )
                    )
    return problems


def merge(document: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """The file's document with the overlay over it."""
    merged = dict(document)
    providers = overlay.get("providers")
    if isinstance(providers, dict) and providers:
        base = document.get("providers")
        tables = dict(base) if isinstance(base, dict) else {}
        for name, table in providers.items():
            below = tables.get(name)
            tables[name] = {**below, **table} if isinstance(below, dict) else dict(table)
        merged["providers"] = tables
    if "routes" in overlay:
        merged["routes"] = list(overlay["routes"])
    return merged


def from_overlay(overlay: Mapping[str, Any], path: tuple[str | int, ...]) -> bool:
    """Whether the value at `path` of the merged document is the overlay's."""
    if not path or path[0] not in overlay:
        return False
    if path[0] == "routes":
        return True
    providers = overlay.get("providers")
    return len(path) < 2 or (isinstance(providers, dict) and path[1] in providers)


def merge_patch(target: Any, patch: Any) -> Any:
    """`patch` applied to `target` as a JSON merge patch (RFC 7386): objects merge, null
    removes a member, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def effective(settings: Settings) -> dict[str, Any]:
    """The providers and routes in force, as the admin API shows them: every provider a
    request can reach or the config names, its keys masked; the routes in order."""
    from .check import describe_keys, needed_providers

    needed = needed_providers(settings)
    named = {p[1] for p, _ in settings.lines if len(p) == 2 and p[0] == "providers"}
    named |= set(settings.overlay.get("providers", {}))
    providers = {}
    for name, provider in sorted(settings.providers.items()):
        if name not in needed and name not in named:
            continue
        doc = {
            f.name: _plain(getattr(provider, f.name))
            for f in dataclasses.fields(provider)
            if f.name not in ("name", "dotenv_keys")
        }
        doc["keys"] = [{"env": var, "key": mask(key)} for var, key in provider.api_keys()]
        doc["key_state"] = describe_keys(provider)
        providers[name] = doc
    routes = [
        {k: v for k, v in _plain(dataclasses.asdict(route)).items() if v not in (None, [], ())}
        for route in settings.routes
    ]
    return {
        "providers": providers,
        "routes": routes,
        "default_route": {"provider": settings.target_provider, "model": settings.target_model},
    }
