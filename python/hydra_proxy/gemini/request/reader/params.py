"""Gemini ``generationConfig`` -> canonical limits, sampling, output format and thinking.

``temperature`` (0-2), ``topP`` (0-1), ``topK`` (an integer >= 1), ``maxOutputTokens``
(>= 1), ``stopSequences`` (strings) -> their canonical fields (how they are sent is
`canonical.request`'s). ``candidateCount``: 1 only (every upstream here makes one
candidate), else a 400. ``responseMimeType``: ``text/plain`` or none -> free text;
``application/json`` with ``responseJsonSchema`` or ``responseSchema`` (Gemini's
Schema; both through `tools.json_schema`, as Gemini CLI puts upper-case type names in either) -> a JSON schema output format, without one -> a
JSON object; any other type (``text/x.enum``) is a 400. ``responseLogprobs: true`` and
``responseModalities`` other than TEXT are a 400 (no upstream here returns them);
``seed``, ``presencePenalty``, ``frequencyPenalty``, ``mediaResolution`` are left out.

``thinkingConfig``: ``thinkingLevel`` MINIMAL / LOW / MEDIUM / HIGH -> the effort of that
name (MINIMAL: thinking off); else ``thinkingBudget`` 0 -> off, -1 (dynamic) -> the
medium effort, N -> a budget of N (at least Anthropic's 1024); each upstream's writer then
maps it to its own reasoning setting. ``includeThoughts`` says whether the thought parts
are streamed back (their replay state always is). No ``thinkingConfig`` -> no thinking asked.
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, is_int, is_number, optional_object, type_name
from ....canonical.request import Requested
from ....canonical.target import MessagesTarget
from ....canonical.thinking import MIN_THINKING_BUDGET, requested_thinking
from .fields import field
from .tools import json_schema

__all__ = ["read_generation_config"]

_CONFIG = "generationConfig"
_LEVELS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high"}


def _number(config: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = field(config, name)
    if value is None:
        return None
    if not is_number(value) or not low <= value <= high:
        raise bad(f"{_CONFIG}.{name}", f"must be a number between {low:g} and {high:g}")
    return value  # type: ignore[no-any-return]


def _positive_int(config: dict[str, Any], name: str) -> int | None:
    value = field(config, name)
    if value is None:
        return None
    if is_number(value) and value == int(value):
        value = int(value)
    if not is_int(value) or value < 1:
        raise bad(f"{_CONFIG}.{name}", "must be an integer of at least 1")
    return int(value)


def read_generation_config(value: Any, asked: Requested, target: MessagesTarget) -> bool:
    """Fill `asked` from ``generationConfig``; whether thoughts are to be streamed back."""
    config = optional_object(value, _CONFIG) or {}
    asked.temperature = _number(config, "temperature", 0.0, 2.0)
    asked.top_p = _number(config, "topP", 0.0, 1.0)
    asked.top_k = _positive_int(config, "topK")
    asked.max_tokens = _positive_int(config, "maxOutputTokens")
    count = _positive_int(config, "candidateCount")
    if count is not None and count != 1:
        raise bad(f"{_CONFIG}.candidateCount", "only 1 candidate can be generated here")
    stops = field(config, "stopSequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise bad(f"{_CONFIG}.stopSequences", "must be an array of strings")
        asked.stop = [s for s in stops if s]
    if field(config, "responseLogprobs") is True:
        raise bad(f"{_CONFIG}.responseLogprobs", "log probabilities are not available here")
    modalities = field(config, "responseModalities")
    if isinstance(modalities, list) and any(str(m).upper() != "TEXT" for m in modalities):
        raise bad(f"{_CONFIG}.responseModalities", "only TEXT can be generated here")
    _output_format(config, asked)
    return _thinking(field(config, "thinkingConfig"), asked, target)


def _output_format(config: dict[str, Any], asked: Requested) -> None:
    mime = field(config, "responseMimeType")
    if mime is None or mime == "text/plain":
        return
    if mime != "application/json":
        raise bad(
            f"{_CONFIG}.responseMimeType",
            f"{mime!r} is not supported here; use text/plain or application/json",
        )
    # Gemini CLI writes Gemini's upper-case type names into responseJsonSchema too.
    schema = field(config, "responseJsonSchema")
    if schema is not None:
        schema = json_schema(schema, f"{_CONFIG}.responseJsonSchema")
    elif field(config, "responseSchema") is not None:
        schema = json_schema(field(config, "responseSchema"), f"{_CONFIG}.responseSchema")
    if schema is None:
        asked.json_object = True
        return
    if not isinstance(schema, dict):
        raise bad(f"{_CONFIG}.responseJsonSchema", f"must be an object, got {type_name(schema)}")
    asked.output_format = {"type": "json_schema", "schema": schema}


def _thinking(value: Any, asked: Requested, target: MessagesTarget) -> bool:
    path = f"{_CONFIG}.thinkingConfig"
    config = optional_object(value, path)
    if config is None:
        return True
    include = field(config, "includeThoughts", True)
    if not isinstance(include, bool):
        raise bad(f"{path}.includeThoughts", f"must be a boolean, got {type_name(include)}")
    level = field(config, "thinkingLevel")
    budget = field(config, "thinkingBudget")
    if level is not None:
        effort = _LEVELS.get(str(level).lower())
        if effort is None:
            raise bad(f"{path}.thinkingLevel", "must be MINIMAL, LOW, MEDIUM or HIGH")
        asked.thinking, asked.effort = requested_thinking(effort, None, target)
    elif budget is not None:
        if not is_int(budget) or budget < -1:
            raise bad(f"{path}.thinkingBudget", "must be an integer, -1 for dynamic")
        if budget == 0:
            asked.thinking = {"type": "disabled"}
        elif budget == -1:
            asked.thinking, asked.effort = requested_thinking("medium", None, target)
        else:
            asked.thinking = {"type": "enabled", "budget_tokens": max(budget, MIN_THINKING_BUDGET)}
    return include
