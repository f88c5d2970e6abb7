"""Providers: where an upstream is, how it is authenticated, and its quirks, as data.

The shipped presets (`presets`) are rows of the same columns. A config's
``[providers.NAME]`` starts from the preset of the same name or the one ``preset = "..."``
names and overrides any column.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .protocols import ProtocolName

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
MAX_TOKENS_FIELDS: tuple[str, ...] = get_args(MaxTokensField)
REASONING_FIELDS = ("reasoning_content", "reasoning")
# The prompt-cache hint an upstream takes: OpenAI's `prompt_cache_key` (one per client
# session), Anthropic-style `cache_control` on Chat content parts (OpenRouter, Chat servers
# in front of Claude), or none (the upstream caches by itself, or would refuse a hint).
CacheHints = Literal["prompt_cache_key", "cache_control", "none"]
CACHE_HINTS: tuple[str, ...] = get_args(CacheHints)


@dataclass(frozen=True)
class Provider:
    name: str
    kind: ProtocolName  # the protocol the upstream serves
    base_url: str
    # The first key variable (kept for callers that know one key); all of them below.
    api_key_env: str | None = None
    # Chat-target quirks (see chat.request.writer.ChatTarget).
    reasoning: bool = False
    # How it takes a reasoning level (canonical.effort.EFFORT_FORMS; None: reasoning_effort
    # when `reasoning`, else none) and the levels its reasoning_effort names (empty: OpenAI's).
    effort_form: str | None = None
    effort_levels: tuple[str, ...] = ()
    replay_reasoning: bool = False
    max_tokens_field: MaxTokensField = "max_tokens"
    max_tokens_limit: int | None = None
    # Takes temperature/top_p (o-series and GPT-5 reasoning models reject them).
    sampling: bool = True
    # Where the upstream streams reasoning text, and where it is replayed.
    reasoning_field: str | None = None
    context_window: int | None = None
    max_output: int | None = None
    # Every variable holding a key for this provider: a key pool (config.keys).
    api_key_envs: tuple[str, ...] = ()
    # No key needed: a local server by preset (ollama, vllm) or `api_key_optional = true`.
    keyless: bool = False
    preset: str | None = None
    cache_hints: CacheHints = "none"
    # Reads images (False: an image goes to the `images` route, or becomes a placeholder).
    vision: bool = True
    # Keys `load` read where the process environment has none (the .env file), by variable.
    dotenv_keys: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.api_key_env is not None and not self.api_key_envs:
            object.__setattr__(self, "api_key_envs", (self.api_key_env,))
        elif self.api_key_envs and self.api_key_env is None:
            object.__setattr__(self, "api_key_env", self.api_key_envs[0])

    def api_keys(self) -> list[tuple[str, str]]:
        """(variable, key) for every key variable that is set: the process environment
        first, then the .env file. An empty variable in the environment means no key."""
        dotenv = dict(self.dotenv_keys)
        keys: list[tuple[str, str]] = []
        seen: set[str] = set()
        for var in self.api_key_envs:
            key = os.environ.get(var)
            if key is None:
                key = dotenv.get(var)
            if key and key not in seen:
                seen.add(key)
                keys.append((var, key))
        return keys

    def api_key(self) -> str | None:
        """The first key (None: no key is set)."""
        keys = self.api_keys()
        return keys[0][1] if keys else None

    @property
    def needs_key(self) -> bool:
        return not self.keyless


def key_variables(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """`api_key_env` (one name or a list) and `api_keys_env` (a list), in order."""
    names: list[str] = []
    for column in ("api_key_env", "api_keys_env"):
        value = raw.get(column)
        if isinstance(value, str):
            names.append(value)
        elif isinstance(value, list):
            names += [v for v in value if isinstance(v, str)]
    return tuple(dict.fromkeys(names))


def build_provider(name: str, raw: Mapping[str, Any], env: Mapping[str, str]) -> Provider:
    """A Provider from a merged row (preset columns overridden by the user's), validated
    by the caller (config.validate). Base-URL variables of the preset apply when the row's
    base URL is the preset's own."""
    base_url = str(raw["base_url"])
    url_env = raw.get("base_url_env")
    if isinstance(url_env, str) and env.get(url_env) and raw.get("_base_url_from_preset"):
        base_url = env[url_env]
    envs = key_variables(raw)
    return Provider(
        name=name,
        kind=raw["kind"],
        base_url=base_url,
        api_key_env=envs[0] if envs else None,
        api_key_envs=envs,
        reasoning=bool(raw.get("reasoning", False)),
        effort_form=raw.get("effort_form"),
        effort_levels=tuple(raw.get("effort_levels", ())),
        replay_reasoning=bool(raw.get("replay_reasoning", False)),
        max_tokens_field=raw.get("max_tokens_field", "max_tokens"),
        max_tokens_limit=raw.get("max_tokens_limit"),
        sampling=bool(raw.get("sampling", True)),
        reasoning_field=raw.get("reasoning_field"),
        context_window=raw.get("context_window"),
        max_output=raw.get("max_output"),
        keyless=bool(raw.get("keyless", False) or raw.get("api_key_optional", False)),
        preset=raw.get("preset"),
        cache_hints=raw.get("cache_hints", "none"),
        vision=bool(raw.get("vision", True)),
        dotenv_keys=tuple((var, env[var]) for var in envs if var in env and var not in os.environ),
    )
