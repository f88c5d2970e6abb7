"""Limits, reasoning, output format, metadata and prompt caching of a Responses request.

``max_output_tokens`` -> ``max_tokens`` (a positive integer; the default and the clamp
are `canonical.request`'s). ``temperature`` 0-2 and ``top_p`` 0-1, ``user`` (else
``safety_identifier``) -> ``metadata.user_id``: `canonical.params`, as for Chat.
``reasoning.effort`` maps like Chat's ``reasoning_effort`` (`canonical.thinking`).
``reasoning.summary`` (auto/concise/detailed; ``generate_summary`` is its older name) asks
for summary text on the reply's reasoning items. ``text.format``: ``text``,
``json_schema`` (its fields in the format object), ``json_object``
(`canonical.params.read_output_format`). ``prompt_cache_key`` (the client wants its prefix
cached across turns; Codex sends one per session) asks the canonical request for prompt
caching (`canonical.request.Requested.cache`); the Chat writer drops it. ``metadata``
(string values), ``prompt_cache_key`` and the other echoed fields are kept for the reply
(Anthropic takes no cache key and no free-form metadata); ``text.verbosity``,
``truncation``, ``service_tier``, ``max_tool_calls``, ``stream_options``,
``client_metadata`` (Codex) and unknown fields are dropped. ``model`` is not read here:
the route decides the upstream model.
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, optional_object, type_name
from ....canonical.thinking import check_effort

__all__ = [
    "SUMMARIES",
    "echoed_string",
    "read_max_output_tokens",
    "read_metadata",
    "read_prompt_cache_key",
    "read_reasoning",
    "read_text",
]

SUMMARIES = ("auto", "concise", "detailed")


def read_max_output_tokens(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad("max_output_tokens", f"must be a positive integer, got {value!r}")
    return value


def read_reasoning(value: Any) -> dict[str, Any]:
    """``reasoning``: its ``effort`` and ``summary``, checked."""
    reasoning = optional_object(value, "reasoning")
    if reasoning is None:
        return {}
    effort = reasoning.get("effort")
    check_effort(effort, "reasoning.effort")
    summary = reasoning.get("summary", reasoning.get("generate_summary"))
    if summary is not None and summary not in SUMMARIES:
        raise bad("reasoning.summary", "must be auto, concise or detailed")
    return {"effort": effort, "summary": summary}


def read_text(value: Any) -> dict[str, Any] | None:
    """The ``text`` configuration (its ``format`` is the output format)."""
    return optional_object(value, "text")


def read_metadata(value: Any) -> dict[str, Any]:
    metadata = optional_object(value, "metadata")
    if metadata is None:
        return {}
    for key, item in metadata.items():
        if not isinstance(item, str):
            raise bad(f"metadata.{key}", f"must be a string, got {type_name(item)}")
    return metadata


def read_prompt_cache_key(body: dict[str, Any]) -> str | None:
    key = body.get("prompt_cache_key")
    if key is not None and not isinstance(key, str):
        raise bad("prompt_cache_key", "must be a string")
    return key


def echoed_string(body: dict[str, Any], name: str) -> str | None:
    """A field the reply echoes when it is a string."""
    value = body.get(name)
    return value if isinstance(value, str) else None
