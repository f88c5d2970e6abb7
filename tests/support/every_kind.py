"""One upstream of each kind: a proxy config with one provider of each upstream kind, all
on one mock upstream (its ``{url}``), the key in ``UP_KEY`` (tests add their routes after
it); and an attempt on a preset of each kind, several OpenAI-style ones."""

from __future__ import annotations

from hydra_proxy.config.presets import preset_row
from hydra_proxy.config.providers import build_provider
from hydra_proxy.config.routes import Attempt, RouteOptions

EVERY_KIND = """
[server]
provider = "chat"

[providers.chat]
kind = "chat"
base_url = "{url}/v1"
api_key_env = "UP_KEY"

[providers.responses]
kind = "responses"
base_url = "{url}/v1"
api_key_env = "UP_KEY"

[providers.claude]
kind = "anthropic"
base_url = "{url}"
api_key_env = "UP_KEY"

[providers.gemini]
kind = "gemini"
base_url = "{url}/v1beta"
api_key_env = "UP_KEY"
"""

# (preset, upstream model) per upstream kind; several OpenAI-style presets, whose quirks
# (reasoning replay, token field) shape the body differently.
UPSTREAMS: dict[str, tuple[str, str]] = {
    "openai": ("openai", "gpt-4.1"),
    "openai-reasoning": ("openai-reasoning", "gpt-5"),
    "deepseek": ("deepseek", "deepseek-chat"),
    "openrouter": ("openrouter", "qwen/qwen3-coder"),
    "anthropic": ("anthropic", "claude-sonnet-4-5"),
    "responses": ("openai-responses", "gpt-5.1-codex"),
    "gemini": ("gemini-native", "gemini-3-pro-preview"),
}


def attempt_for(upstream: str) -> Attempt:
    preset, model = UPSTREAMS[upstream]
    row = preset_row(preset)
    assert row is not None
    return Attempt(build_provider(preset, row, {}), model, RouteOptions())
