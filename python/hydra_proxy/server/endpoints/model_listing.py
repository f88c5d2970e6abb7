"""The model listings, one shape per client: every name a client may ask for
(`config.models_listing`: the routes' names and aliases) with its limits.

- OpenAI's (``{"object": "list", "data": [...]}``), for Chat and other OpenAI clients;
- Anthropic's, for a request with ``anthropic-version`` (Claude Code's model discovery keeps
  the names with "claude" in them: a route names them as aliases); ``display_name`` says
  which model answers ("deepseek-chat via hydra");
- Codex's catalog, for a request with ``client_version`` (Codex asks its provider for it):
  ``{"models": [...]}`` with what Codex needs to run a model it does not know: the context
  window (its auto-compaction fires at 90% of it), the reasoning levels, the tools.

``GET /v1/models/{id}`` (the SDKs' ``models.retrieve``) answers one entry of the first two
shapes. Pure: the endpoint (server/endpoints/handlers.py) does the I/O.
"""

from __future__ import annotations

from typing import Any

from ...config import ModelInfo

__all__ = [
    "ANTHROPIC_CREATED",
    "anthropic_entry",
    "anthropic_listing",
    "codex_catalog",
    "openai_entry",
    "openai_listing",
]

ANTHROPIC_CREATED = "1970-01-01T00:00:00Z"
VIA = " via hydra"

# Codex's reasoning levels, with the words its picker shows.
_LEVELS = {
    "low": "Fast answers, light reasoning",
    "medium": "Balanced speed and reasoning",
    "high": "Deep reasoning for hard problems",
}
# Tool output Codex keeps in the history, in tokens (its own default for API models).
_TRUNCATION_TOKENS = 10_000
# Codex needs instructions for a model its catalog describes (its own prompts are for its
# own models): what an agent in a terminal is for and how it works, in a few lines.
CODEX_INSTRUCTIONS = """\
You are a coding agent working in the user's terminal through the Codex CLI. You and the \
user share a workspace: read files, run commands and edit code with the tools you are \
given, and check your work by running it.

- Understand the request and the code before changing anything; keep changes minimal, \
focused and in the style of the surrounding code.
- Run commands with the shell tool; read their output; never guess what a file holds or \
what a command printed.
- Respect the sandbox and approval settings; do not undo changes you did not make.
- For a task of several steps, keep a short plan and update it as you go.
- When you are done, say briefly what you changed and how you verified it; mention \
anything left to do.
"""


def display_name(info: ModelInfo) -> str:
    return (info.model or info.id) + VIA


def openai_entry(info: ModelInfo, created: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": info.id,
        "object": "model",
        "created": created,
        "owned_by": info.provider,
    }
    if info.context_window is not None:
        row["context_window"] = info.context_window
    if info.max_output is not None:
        row["max_output_tokens"] = info.max_output
    return row


def openai_listing(listing: list[ModelInfo], created: int) -> dict[str, Any]:
    return {"object": "list", "data": [openai_entry(m, created) for m in listing]}


def anthropic_entry(info: ModelInfo) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "model",
        "id": info.id,
        "display_name": display_name(info),
        "created_at": ANTHROPIC_CREATED,
    }
    if info.context_window is not None:
        item["max_input_tokens"] = info.context_window
    if info.max_output is not None:
        item["max_tokens"] = info.max_output
    return item


def anthropic_listing(listing: list[ModelInfo]) -> dict[str, Any]:
    return {
        "data": [anthropic_entry(m) for m in listing],
        "has_more": False,
        "first_id": listing[0].id if listing else None,
        "last_id": listing[-1].id if listing else None,
    }


def codex_entry(info: ModelInfo, priority: int) -> dict[str, Any]:
    levels = list(_LEVELS) if info.reasoning else []
    window = info.context_window
    return {
        "slug": info.id,
        "display_name": display_name(info),
        "description": f"{info.model or info.id} on provider {info.provider}, through hydra-proxy",
        "default_reasoning_level": "medium" if levels else None,
        "supported_reasoning_levels": [
            {"effort": level, "description": _LEVELS[level]} for level in levels
        ],
        "shell_type": "shell_command",
        "visibility": "list",
        "supported_in_api": True,
        "priority": priority,
        "upgrade": None,
        "base_instructions": CODEX_INSTRUCTIONS,
        "model_messages": None,
        "availability_nux": None,
        "prefer_websockets": False,
        "support_verbosity": False,
        "default_verbosity": None,
        "apply_patch_tool_type": None,
        "web_search_tool_type": "text",
        "input_modalities": ["text", "image"] if info.vision else ["text"],
        "supports_image_detail_original": False,
        "truncation_policy": {"mode": "tokens", "limit": _TRUNCATION_TOKENS},
        "supports_parallel_tool_calls": True,
        "context_window": window,
        "max_context_window": window,
        "auto_compact_token_limit": None,
        "experimental_supported_tools": [],
        "supports_search_tool": False,
        "supports_reasoning_summaries": info.reasoning,
        "supports_reasoning_summary_parameter": info.reasoning,
        "default_reasoning_summary": "none",
        "tool_mode": None,
        "multi_agent_version": None,
        "multi_agent_reasoning_effort": None,
        "use_responses_lite": False,
        "supports_reasoning_effort_updates": False,
        "include_skills_usage_instructions": True,
        "include_apps_usage_instructions": True,
        "include_plugin_usage_instructions": True,
        "guardian": None,
        "node_repl_auto_review_required": False,
        "node_repl_disabled": False,
        "requires_sandboxed_review": False,
        "auto_review_model_override": None,
        "model_specialty": None,
        "supports_experimental_context": False,
        "default_service_tier": None,
        "service_tiers": [],
        "additional_speed_tiers": [],
    }


def codex_catalog(listing: list[ModelInfo]) -> dict[str, Any]:
    return {"models": [codex_entry(m, i) for i, m in enumerate(listing)]}
