"""Limits, stop sequences, user id and response format -> Chat parameters.

``max_tokens`` (required, integer >= 1) -> ``target.max_tokens_field`` (in `translate`),
clamped to ``target.max_tokens_limit``. ``stop_sequences`` -> ``stop``: empty strings
dropped, only the first ``MAX_STOP_SEQUENCES`` kept (OpenAI rejects more; a 400 would make
the proxy unusable for such clients). ``metadata.user_id`` (string) -> ``user``: verbatim
when it is 6-64 characters of ``[A-Za-z0-9_-]``, else its SHA-256 hex digest (Claude Code
sends a ~150-character JSON string; OpenRouter rejects ``user`` over 128 characters,
Zhipu outside 6-128, OpenAI caps ``safety_identifier`` at 64). ``output_config.format``
(or the older top-level ``output_format``) of type json_schema -> ``response_format``
json_schema named ``output`` without ``strict`` (OpenAI strict mode requires a schema
subset Anthropic does not).
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import TYPE_CHECKING, Any

from ..common import MAX_STOP_SEQUENCES, bad

if TYPE_CHECKING:
    from .translate import ChatTarget

__all__ = ["user_field", "write_max_tokens", "write_response_format", "write_stop"]

log = logging.getLogger(__name__)


# OpenAI safety_identifier: <= 64 chars; OpenRouter/Zhipu `user`: 6-128 chars; some
# upstreams also require this character set.
_SAFE_USER = re.compile(r"[A-Za-z0-9_-]{6,64}")


def write_max_tokens(body: dict[str, Any], target: ChatTarget) -> int:
    value = body.get("max_tokens")
    if value is None:
        raise bad("max_tokens", "field required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad("max_tokens", "must be an integer of at least 1")
    limit = target.max_tokens_limit
    if limit is not None and limit >= 1:
        return min(value, limit)
    return value


def user_field(user_id: str) -> str:
    """`metadata.user_id` as an OpenAI `user` every known upstream accepts."""
    if _SAFE_USER.fullmatch(user_id):
        return user_id
    return hashlib.sha256(user_id.encode("utf-8", "surrogatepass")).hexdigest()


def write_stop(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("stop_sequences", "must be a list of strings")
    stops: list[str] = []
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise bad(f"stop_sequences.{k}", "must be a string")
        if item:
            stops.append(item)
    if len(stops) > MAX_STOP_SEQUENCES:
        log.debug("kept %d of %d stop sequences", MAX_STOP_SEQUENCES, len(stops))
    return stops[:MAX_STOP_SEQUENCES]


def write_response_format(body: dict[str, Any]) -> dict[str, Any] | None:
    output_config = body.get("output_config")
    fmt = output_config.get("format") if isinstance(output_config, dict) else None
    if fmt is None:
        fmt = body.get("output_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        return None
    return {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
