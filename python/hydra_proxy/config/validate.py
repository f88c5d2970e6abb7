"""Reading and validating a config file: every problem found, with its file and line.

`read_config` parses the TOML (a syntax error keeps tomllib's line and column); the
`Validator` checks tables and keys against `config.schema`, builds the providers (presets
merged with the file's tables) and routes, and collects every problem before raising one
`ConfigError`, so a user fixes the file in one pass.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import Any

from .errors import ConfigError, Problem
from .overlay import Overlay, from_overlay
from .presets import preset_row, presets
from .protocols import with_current_kind
from .providers import Provider, build_provider
from .routes import EFFORTS, ChainLink, Route, glob_problem
from .schema import (
    ADMISSION,
    CLUSTER,
    FALLBACK_ENTRY,
    IDENTITY,
    IDENTITY_REQUIRED,
    PRICE,
    PRICE_REQUIRED,
    PROVIDER,
    ROUTE,
    SERVER,
    TOP_LEVEL,
    USAGE,
    Field,
    did_you_mean,
)
from .source import Path, SourceMap
from .web import host_problem, origin_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def read_config(path: str) -> tuple[dict[str, Any], SourceMap]:
    """The parsed file and its source map; a ConfigError names the file (and the line of a
    TOML syntax error)."""
    try:
        text = FilePath(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            Problem(
                f"cannot read the config file: {exc.strerror or exc}",
                file=path,
                hint="check the path given by --config or HYDRA_CONFIG",
            )
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        position = _TOML_POSITION.search(str(exc))
        raise ConfigError(
            Problem(
                f"invalid TOML: {exc}",
                file=path,
                line=int(position.group(1)) if position else None,
                hint="fix the syntax at that position (https://toml.io)",
            )
        ) from None
    return data, SourceMap(text)


def list_problem(key: str, value: object) -> str | None:
    """What is wrong with the entries of a [server] list setting (None: nothing)."""
    if not isinstance(value, list):
        return None
    check = {"allowed_hosts": host_problem, "allowed_origins": origin_problem}.get(key)
    for entry in value:
        if not isinstance(entry, str) or not entry.strip():
            return f"{key} must be a list of non-empty strings, not {value!r}"
        problem = check(entry) if check is not None else None
        if problem is not None:
            return f"{key} entry {entry!r}: {problem}"
    if key == "signing_key_file" and not value:
        return "signing_key_file must name at least one file"
    return None


def type_ok(value: object, spec: Field) -> bool:
    for kind in spec.types:
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind not in (int, float) and isinstance(value, kind):
            return True
    return False


class Validator:
    """Collects problems against one file (`file` None: no file, values from elsewhere)."""

    def __init__(self, file: str | None, source: SourceMap | None) -> None:
        self.file = file
        self.source = source
        self.problems: list[Problem] = []
        # Provider names the file declares, built or not (a route naming one whose table
        # has a problem gets no second, misleading "unknown provider" error).
        self.declared: set[str] = set()

    overlay: Overlay | None = None
    """The live config merged over the file: what it set is reported against it."""

    def line(self, path: Path) -> int | None:
        if self.overlay is not None and from_overlay(self.overlay.document, path):
            return None
        return self.source.line(path) if self.source is not None else None

    def add(self, path: Path, message: str, hint: str | None = None) -> None:
        if self.overlay is not None and from_overlay(self.overlay.document, path):
            where = ".".join(str(p) for p in path)
            self.problems.append(Problem(f"{message} (at {where})", self.overlay.where, None, hint))
            return
        self.problems.append(Problem(message, self.file, self.line(path), hint))

    def raise_if_any(self) -> None:
        if self.problems:
            # The file's problems in line order, then those of variables and flags.
            raise ConfigError(sorted(self.problems, key=lambda p: (p.line is None, p.line or 0)))

    # --- generic table checks ------------------------------------------------------------

    def unknown_keys(
        self, path: Path, table: Mapping[str, Any], known: Mapping[str, Field], where: str
    ) -> None:
        unknown = [k for k in table if k not in known]
        for key in unknown:
            close = did_you_mean(key, known)
            hint = f"did you mean {close!r}?" if close else f"known keys: {', '.join(known)}"
            self.add((*path, key), f"unknown keys in {where}: {key!r}", hint)

    def check_value(self, path: Path, key: str, value: object, spec: Field, where: str) -> bool:
        if not type_ok(value, spec):
            self.add(
                (*path, key),
                f"{where} {key} must be {spec.type_name}, not {value!r}",
                f"e.g. {key} = {_example(spec)}",
            )
            return False
        if spec.choices and isinstance(value, str) and value not in spec.choices:
            self.add(
                (*path, key),
                f"{where} {key} = {value!r} is not one of {', '.join(spec.choices)}",
                _choice_hint(value, spec.choices),
            )
            return False
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if is_number and not spec.in_range(key, value):  # type: ignore[arg-type]
            self.add((*path, key), f"{where} {key} = {value!r}: {spec.range_text(key)}")
            return False
        return True

    def check_table(
        self, path: Path, table: Mapping[str, Any], known: Mapping[str, Field], where: str
    ) -> None:
        self.unknown_keys(path, table, known, where)
        for key, value in table.items():
            if key in known:
                self.check_value(path, key, value, known[key], where)

    # --- the document --------------------------------------------------------------------

    def top_level(self, document: Mapping[str, Any]) -> None:
        for key, value in document.items():
            if key in TOP_LEVEL:
                wanted = {
                    "server": dict, "providers": dict, "routes": list, "pricing": dict,
                    "usage": dict, "admission": dict, "cluster": dict, "identity": dict,
                }[key]  # fmt: skip
                if not isinstance(value, wanted):
                    self.add((key,), f"{key} must be {TOP_LEVEL[key]}", _top_hint(key))
                continue
            is_table = isinstance(value, (dict, list))
            if key in SERVER and not is_table:
                self.add((key,), f"{key!r} is not inside a table", f"put it under [server]: "
                         f"[server]\\n{key} = {value!r}".replace("\\n", "\n  "))  # fmt: skip
                continue
            close = did_you_mean(key, TOP_LEVEL)
            shown = (f"[[{key}]]" if isinstance(value, list) else f"[{key}]") if is_table else key
            inner = (
                [k for k, v in value.items() if isinstance(v, dict)]
                if isinstance(value, dict)
                else []
            )
            if inner and len(inner) == len(value):  # `[provider.deepseek]`: show it so
                shown = f"[{key}.{inner[0]}]"
            if close == "providers" and inner:
                hint = f"did you mean [providers.{inner[0]}]?"
            elif close:
                hint = f"did you mean {_top_header(close)}?"
            else:
                hint = (
                    "the file has [server], [providers.NAME], [[routes]] and "
                    '[pricing."MODEL-GLOB"] tables'
                )
            self.add((key,), f"unknown table {shown}", hint)

    def server(self, table: Mapping[str, Any]) -> None:
        self.check_table(("server",), table, SERVER, "[server]")
        for key in ("allowed_hosts", "allowed_origins", "signing_key_file", "session_headers"):
            problem = list_problem(key, table.get(key))
            if problem is not None:
                self.add(("server", key), f"[server] {problem}")

    def usage(self, table: Mapping[str, Any]) -> None:
        self.check_table(("usage",), table, USAGE, "[usage]")

    def cluster(self, table: Mapping[str, Any]) -> None:
        self.check_table(("cluster",), table, CLUSTER, "[cluster]")

    def identity(self, table: Mapping[str, Any], jwks: str | None) -> None:
        """[identity] checked, with `jwks` (the file's, or its variable's): the issuer and
        audience every token must name, an admin claim with its value."""
        from ..team.identity import source_problem

        self.check_table(("identity",), table, IDENTITY, "[identity]")
        if not jwks:
            return
        for key in IDENTITY_REQUIRED:
            if not table.get(key):
                self.add(
                    ("identity",),
                    f"[identity] needs {key}: tokens are accepted only when they name it",
                    f'e.g. {key} = "{"https://login.example.com/" if key == "issuer" else "hydra-proxy"}"',
                )
        if ("admin_claim" in table) != ("admin_value" in table):
            self.add(("identity",), "[identity] admin_claim and admin_value go together",
                     'e.g. admin_claim = "groups" and admin_value = "proxy-admins"')  # fmt: skip
        problem = source_problem(jwks)
        if problem is not None:
            where = "[identity] " if table.get("jwks") == jwks else "HYDRA_IDENTITY_JWKS: "
            self.add(("identity", "jwks"), where + problem)

    def admission(
        self, table: Mapping[str, Any], providers: Mapping[str, Provider]
    ) -> dict[str, int]:
        """[admission] checked; returns its per-provider bounds (known providers only)."""
        self.check_table(("admission",), table, ADMISSION, "[admission]")
        bounds: dict[str, int] = {}
        per_provider = table.get("providers", {})
        if not isinstance(per_provider, dict):
            return bounds
        for name, value in per_provider.items():
            path = ("admission", "providers", name)
            if name not in providers and name not in self.declared:
                close = did_you_mean(name, providers)
                self.add(
                    path,
                    f"[admission.providers] names an unknown provider {name!r}",
                    (f"did you mean {close!r}? " if close else "")
                    + f"known: {', '.join(sorted(providers))}",
                )
            elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
                self.add(
                    path,
                    f"[admission.providers] {name} must be a whole number of at least 0, "
                    f"not {value!r}",
                    f"e.g. {name} = 16 (0: unbounded)",
                )
            else:
                bounds[name] = value
        return bounds

    def providers(self, tables: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Provider]:
        built: dict[str, Provider] = {}
        for name in presets():
            row = preset_row(name)
            assert row is not None
            built[name] = build_provider(name, row, env)
        self.declared = set(built) | set(tables)
        for name, raw in tables.items():
            path: Path = ("providers", name)
            where = f"[providers.{name}]"
            if not isinstance(raw, dict):
                self.add(
                    path, f"{where} must be a table", f"write [providers.{name}] and keys under it"
                )
                continue
            raw = with_current_kind(raw)
            problems_before = len(self.problems)
            self.check_table(path, raw, PROVIDER, where)
            merged = self._over_preset(path, where, name, raw)
            if merged is None:
                continue
            self._provider_lists(path, where, raw)
            if len(self.problems) == problems_before:
                built[name] = build_provider(name, merged, env)
        return built

    def _over_preset(
        self, path: Path, where: str, name: str, raw: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A provider's table over its preset's row (None: the preset is unknown)."""
        preset_name = raw.get("preset", name if name in presets() else None)
        base: dict[str, Any] = {}
        if preset_name is not None:
            row = preset_row(str(preset_name))
            if row is None:
                self.add((*path, "preset"), f"{where} preset {preset_name!r} is not a shipped preset",
                         _choice_hint(str(preset_name), tuple(presets())))  # fmt: skip
                return None
            base = row
        merged = {**base, **raw}
        if raw.get("base_url") is not None:
            merged["_base_url_from_preset"] = False
        if "api_key_env" in raw or "api_keys_env" in raw:  # the file's replace the preset's
            merged = {k: v for k, v in merged.items() if k not in ("api_key_env", "api_keys_env")}
            merged.update({k: raw[k] for k in ("api_key_env", "api_keys_env") if k in raw})
        for column in ("kind", "base_url"):
            if column not in merged:
                self.add(path, f"{where} needs {column}",
                         f'add {column} = {_example(PROVIDER[column])}, or preset = "openai" '
                         f"(shipped presets: {', '.join(presets())})")  # fmt: skip
        return merged

    def _provider_lists(self, path: Path, where: str, raw: dict[str, Any]) -> None:
        """The list columns' items (the table check saw only that they are lists)."""
        levels = raw.get("effort_levels")
        if isinstance(levels, list) and not all(v in EFFORTS for v in levels):
            self.add((*path, "effort_levels"),
                     f"{where} effort_levels must list efforts: {', '.join(EFFORTS)}")  # fmt: skip
        for column in ("api_key_env", "api_keys_env"):
            value = raw.get(column)
            if isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
                self.add((*path, column), f"{where} {column} must list variable names")

    def routes(self, entries: list[Any], providers: Mapping[str, Provider]) -> list[Route]:
        routes: list[Route] = []
        for index, raw in enumerate(entries):
            path: Path = ("routes", index)
            where = f"[[routes]] #{index + 1}"
            if not isinstance(raw, dict):
                self.add(path, f"{where} must be a table")
                continue
            before = len(self.problems)
            self.check_table(path, raw, ROUTE, where)
            route = self._route(path, where, raw, providers)
            if route is not None and len(self.problems) == before:
                routes.append(route)
        return routes

    def _fallback(self, path: Path, where: str, fallback: Any) -> list[ChainLink]:
        """The chain's links after the first: provider names or {provider, model} tables."""
        chain: list[ChainLink] = []
        for i, entry in enumerate(fallback if isinstance(fallback, list) else []):
            entry_path = (*path, "fallback")
            if isinstance(entry, str):
                chain.append(ChainLink(entry))
            elif isinstance(entry, dict):
                self.check_table(entry_path, entry, FALLBACK_ENTRY, f"{where} fallback #{i + 1}")
                if not isinstance(entry.get("provider"), str):
                    self.add(entry_path, f"{where} fallback #{i + 1} needs a provider")
                    continue
                chain.append(ChainLink(entry["provider"], entry.get("model")))
            else:
                self.add(entry_path, f"{where} fallback #{i + 1} must be a provider name or "
                         "a {provider = ..., model = ...} table")  # fmt: skip
        return chain

    def _unknown_providers(
        self,
        path: Path,
        where: str,
        chain: list[ChainLink],
        names: list[str],
        providers: Mapping[str, Provider],
    ) -> None:
        for target in chain:
            if target.provider in self.declared and target.provider not in providers:
                continue  # its table has a problem of its own, reported there
            if target.provider not in providers:
                key = (
                    "fallback"
                    if target is not chain[0] and target.provider not in names
                    else "provider"
                )
                self.add((*path, key), f"{where} names unknown provider {target.provider!r}",
                         _choice_hint(target.provider, tuple(sorted(self.declared)),
                                      f"add a [providers.{target.provider}] table, or use one of"))  # fmt: skip

    def _effort(
        self, path: Path, where: str, effort: Any
    ) -> tuple[str | None, tuple[tuple[str, str], ...]]:
        """A route's effort: one level for every request, or a map of asked -> sent."""
        if isinstance(effort, str):  # checked against EFFORTS with the table
            return effort, ()
        if not isinstance(effort, dict):
            return None, ()
        for key, value in effort.items():
            if key not in EFFORTS or value not in EFFORTS:
                self.add((*path, "effort", key),
                         f"{where} effort map {key!r} -> {value!r}: both must be one of {', '.join(EFFORTS)}")  # fmt: skip
        return None, tuple((str(k), str(v)) for k, v in effort.items())

    def _route(
        self, path: Path, where: str, raw: Mapping[str, Any], providers: Mapping[str, Provider]
    ) -> Route | None:
        match = raw.get("match", "*")
        match = match if isinstance(match, str) else "*"  # a wrong type is reported already
        problem = glob_problem(match)
        if problem:
            self.add((*path, "match"), f"{where} match = {match!r} is not a valid glob: {problem}")
        chain: list[ChainLink] = []
        first = raw.get("provider")
        if first is None:
            self.add(
                path,
                f"{where} needs a provider",
                'add provider = "NAME" (a [providers.NAME] table or a preset)',
            )
            return None  # fmt: skip
        names = [first] if isinstance(first, str) else first if isinstance(first, list) else []
        if not names or not all(isinstance(n, str) for n in names):
            self.add((*path, "provider"), f"{where} provider must name one or more providers")
            return None
        model = raw.get("model")
        chain.append(ChainLink(names[0], model))
        chain += [ChainLink(n) for n in names[1:]]
        chain += self._fallback(path, where, raw.get("fallback", []))
        self._unknown_providers(path, where, chain, names, providers)
        fixed, effort_map = self._effort(path, where, raw.get("effort"))
        return Route(
            match=match,
            provider=chain[0].provider,
            model=model,
            spoof_model=raw.get("spoof_model"),
            max_tokens_limit=raw.get("max_tokens_limit"),
            fallback=tuple(chain[1:]),
            name=raw.get("name"),
            background=raw.get("background"),
            thinking=raw.get("thinking"),
            images=raw.get("images"),
            subagent=raw.get("subagent"),
            teammate=raw.get("teammate"),
            server_tools=raw.get("server_tools"),
            long_context=raw.get("long_context"),
            client=raw.get("client"),
            effort=fixed,
            effort_map=effort_map,
            context_window=raw.get("context_window"),
            max_output=raw.get("max_output"),
            vision=raw.get("vision"),
            aliases=self.aliases(raw.get("aliases"), (*path, "aliases"), where),
        )

    def aliases(self, value: Any, path: Path, where: str) -> tuple[str, ...]:
        if value is None:
            return ()
        names = [v for v in value if isinstance(v, str) and v and not any(c in v for c in "*?[")]
        if len(names) != len(value):
            self.add(path, f"{where} aliases must be model names (strings without wildcards)",
                     'e.g. aliases = ["claude-sonnet-4-5", "claude-haiku-4-5"]')  # fmt: skip
        return tuple(names)

    def pricing(self, tables: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        prices: dict[str, dict[str, Any]] = {}
        for pattern, raw in tables.items():
            path: Path = ("pricing", pattern)
            where = f"[pricing.{pattern!r}]"
            if not isinstance(raw, dict):
                self.add(path, f"{where} must be a table of rates",
                         f'e.g. [pricing."{pattern}"] with input = 1.0 and output = 2.0')  # fmt: skip
                continue
            before = len(self.problems)
            problem = glob_problem(pattern)
            if problem:
                self.add(path, f"{where} is not a valid glob: {problem}")
            self.check_table(path, raw, PRICE, where)
            for kind in PRICE_REQUIRED:
                if kind not in raw:
                    self.add(path, f"{where} needs {kind} (USD per million tokens)")
            if len(self.problems) == before:
                prices[pattern] = dict(raw)
        return prices


# Each top-level table: how its header is written, and how to write it when it is not a table.
_TOP_TABLES = {
    "server": ("[server]", "write [server] and its keys under it"),
    "providers": ("[providers.NAME]", "write one [providers.NAME] table per provider"),
    "routes": ("[[routes]]", "write each route as a [[routes]] table (double brackets)"),
    "pricing": (
        '[pricing."MODEL-GLOB"]',
        'write one [pricing."MODEL-GLOB"] table of rates per model pattern',
    ),
    "usage": ("[usage]", "write [usage] and its keys (ledger, tracing) under it"),
    "admission": ("[admission]", "write [admission] and its keys (provider_streams, ...) under it"),
    "cluster": ("[cluster]", "write [cluster] and its keys (redis_url, ...) under it"),
}


def _top_header(name: str) -> str:
    return _TOP_TABLES[name][0]


def _top_hint(name: str) -> str:
    return _TOP_TABLES[name][1]


def _example(spec: Field) -> str:
    if spec.choices:
        return f'"{spec.choices[0]}"'
    kind = spec.types[0]
    return {str: '"..."', bool: "true", int: "8192", float: "30", list: '["A", "B"]', dict: "{}"}[
        kind
    ]


def _choice_hint(value: str, choices: tuple[str, ...], lead: str = "use one of") -> str:
    close = did_you_mean(value, choices)
    return (f"did you mean {close!r}? " if close else "") + f"{lead} {', '.join(choices)}"


__all__ = ["Validator", "read_config", "type_ok"]
