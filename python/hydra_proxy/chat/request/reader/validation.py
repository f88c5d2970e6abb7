"""Validation of a Chat request's top level: what Claude cannot do is refused, by field.

The request is validated as OpenAI would (types, ranges, roles, tool call linkage: each
module checks its own fields), and everything Claude cannot do is refused with a 400 naming
the field: ``n`` other than 1, ``logprobs: true``, ``top_logprobs`` > 0, ``audio`` output,
``modalities`` containing ``"audio"``, ``input_audio`` parts, ``file_id`` references (the
proxy has no access to OpenAI's Files API), non-zero ``presence_penalty``/
``frequency_penalty``, a non-empty ``logit_bias``, ``custom``
(free-form) tools and tool calls, ``allowed_tools`` entries naming unknown tools, and the
deprecated ``functions``/``function_call`` request fields, ``function_call`` on assistant
messages and ``role: "function"`` messages (use ``tools``/``tool_calls``).

Accepted and dropped (harmless OpenAI-only knobs): ``seed``, ``store``, ``metadata``,
``service_tier``, ``prompt_cache_key`` (it asks for caching: `translate`),
``prompt_cache_retention``, ``verbosity``,
``prediction`` (a latency hint; the answer is the same without it),
``stream_options.include_obfuscation``, the neutral values of the refused knobs above
(``n: 1``, ``logprobs: false``, ``top_logprobs: 0``, penalties ``0``, ``logit_bias: {}``,
``modalities: ["text"]``), message ``name`` (as Anthropic's own compatibility layer does),
image ``detail``, tool ``strict``, and unknown top-level fields (debug log). ``model`` is
not read: the route decides the upstream model (`MessagesTarget.model`).
"""

from __future__ import annotations

import logging
from typing import Any

from ....canonical.fields import bad, is_int, is_number, type_name

__all__ = ["refuse_unsupported"]

log = logging.getLogger(__name__)


_DROPPED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "seed",
        "store",
        "metadata",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "verbosity",
        "prediction",
        "user",
        "safety_identifier",
    }
)


# Every field this reader reads or refuses (what is left is unknown: dropped, logged).
_KNOWN_FIELDS = _DROPPED_FIELDS | {
    "n",
    "logprobs",
    "top_logprobs",
    "audio",
    "modalities",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "web_search_options",
    "functions",
    "function_call",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "temperature",
    "top_p",
    "top_k",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "reasoning",
    "thinking",
    "enable_thinking",
    "chat_template_kwargs",
    "response_format",
}


# One check per Chat field the proxy cannot carry, each its own 400: a flat list reads best.
def refuse_unsupported(body: dict[str, Any]) -> None:  # noqa: C901
    n = body.get("n")
    if n is not None and (not is_int(n) or n != 1):
        raise bad("n", "Claude returns one choice; n must be 1")
    logprobs = body.get("logprobs")
    if logprobs is not None and not isinstance(logprobs, bool):
        raise bad("logprobs", f"must be a boolean, got {type_name(logprobs)}")
    if logprobs:
        raise bad("logprobs", "Claude does not return log probabilities; omit it or send false")
    top_logprobs = body.get("top_logprobs")
    if top_logprobs is not None and (not is_int(top_logprobs) or top_logprobs != 0):
        raise bad("top_logprobs", "Claude does not return log probabilities; omit it")
    if body.get("audio") is not None:
        raise bad("audio", "Claude cannot produce audio output")
    modalities = body.get("modalities")
    if modalities is not None:
        if not isinstance(modalities, list) or not all(isinstance(m, str) for m in modalities):
            raise bad("modalities", "must be an array of strings")
        for i, modality in enumerate(modalities):
            if modality != "text":
                raise bad(f"modalities[{i}]", f"Claude can only produce text, not {modality!r}")
    for name in ("presence_penalty", "frequency_penalty"):
        value = body.get(name)
        if value is None:
            continue
        if not is_number(value) or not -2 <= value <= 2:
            raise bad(name, "must be a number between -2 and 2")
        if value != 0:
            raise bad(name, f"Claude has no {name}; omit it or send 0")
    logit_bias = body.get("logit_bias")
    if logit_bias is not None:
        if not isinstance(logit_bias, dict):
            raise bad("logit_bias", f"must be an object, got {type_name(logit_bias)}")
        if logit_bias:
            raise bad("logit_bias", "Claude does not support logit_bias; omit it")
    options = body.get("web_search_options")
    if options is not None and not isinstance(options, dict):
        raise bad("web_search_options", f"must be an object, got {type_name(options)}")
    for name in ("functions", "function_call"):
        if body.get(name) is not None:
            raise bad(
                name, "deprecated function calling is not supported; use tools and tool_choice"
            )
    for name in ("stream",):
        value = body.get(name)
        if value is not None and not isinstance(value, bool):
            raise bad(name, f"must be a boolean, got {type_name(value)}")
    unknown = [name for name in body if name not in _KNOWN_FIELDS]
    if unknown:
        log.debug("dropped unknown request fields: %s", ", ".join(sorted(unknown)))
