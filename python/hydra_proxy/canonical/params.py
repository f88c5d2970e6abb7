"""Sampling, limits, output format and user id of the canonical request, read and written.

Readers (the two OpenAI protocols share these fields). Numbers are range-checked
(`read_number`); how ``temperature``/``top_p`` are sent depends on thinking (`request`).
``user`` (else ``safety_identifier``) -> ``metadata.user_id``, verbatim up to 256
characters, else its SHA-256 hex digest (`read_user_id`). An output format
(`read_output_format`): ``text`` -> nothing; ``json_schema`` -> ``output_config.format``
``{type: json_schema, schema}`` (``name``/``strict``/``description`` dropped; ``schema``
required); ``json_object`` -> Anthropic has no "any JSON object" mode, so the reader
appends `JSON_OBJECT_INSTRUCTION` to the system text.

Writers. ``max_tokens`` is required, an integer >= 1, clamped to the target's limit
(`max_tokens`). ``stop_sequences``: empty strings dropped, only the first N kept (the
upstream's limit; a 400 would make the proxy unusable for such clients) (`stop_sequences`).
``temperature``/``top_p`` must be numbers (`sampling`). ``output_config.format`` (or the
older top-level ``output_format``) of type json_schema -> its schema (`output_schema`).
``metadata.user_id`` (`user_id`) -> as an OpenAI ``user``: verbatim when it is 6-64
characters of ``[A-Za-z0-9_-]``, else its SHA-256 hex digest (`openai_user`: Claude Code
sends a ~150-character JSON string; OpenRouter rejects ``user`` over 128 characters,
Zhipu outside 6-128, OpenAI caps ``safety_identifier`` at 64).
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

from .fields import bad, is_number, optional_string, type_name

__all__ = [
    "JSON_OBJECT_INSTRUCTION",
    "MAX_USER_ID_CHARS",
    "max_tokens",
    "openai_user",
    "output_schema",
    "read_number",
    "read_output_format",
    "read_user_id",
    "sampling",
    "stop_sequences",
    "user_id",
]

log = logging.getLogger(__name__)

MAX_USER_ID_CHARS = 256
JSON_OBJECT_INSTRUCTION = (
    "Respond with a single valid JSON object and nothing else: no prose, no Markdown code fence."
)
# OpenAI safety_identifier: <= 64 chars; OpenRouter/Zhipu `user`: 6-128 chars; some
# upstreams also require this character set.
_SAFE_USER = re.compile(r"[A-Za-z0-9_-]{6,64}")


# -- readers


def read_number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if not is_number(value):
        raise bad(name, f"must be a number, got {type_name(value)}")
    if not low <= value <= high:
        raise bad(name, f"must be between {low:g} and {high:g}, got {value!r}")
    return value  # type: ignore[no-any-return]


def read_user_id(body: dict[str, Any]) -> str | None:
    """``user`` (else ``safety_identifier``) as ``metadata.user_id``."""
    for name in ("user", "safety_identifier"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise bad(name, f"must be a string, got {type_name(value)}")
        if not value:
            continue
        if len(value) > MAX_USER_ID_CHARS:
            return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        return value
    return None


def read_output_format(
    value: Any, path: str, schema_key: str | None
) -> tuple[dict[str, Any] | None, bool]:
    """(``output_config.format``, whether a JSON object is asked for) of a format object
    at `path` whose json_schema fields sit under `schema_key` (None: in the object)."""
    if value is None:
        return None, False
    if not isinstance(value, dict):
        raise bad(path, f"must be an object, got {type_name(value)}")
    ftype = value.get("type")
    if ftype == "text":
        return None, False
    if ftype == "json_object":
        return None, True
    if ftype != "json_schema":
        raise bad(f"{path}.type", "must be 'text', 'json_object' or 'json_schema'")
    spec: Any = value if schema_key is None else value.get(schema_key)
    spec_path = path if schema_key is None else f"{path}.{schema_key}"
    if not isinstance(spec, dict):
        raise bad(spec_path, "required: an object with name and schema")
    optional_string(spec.get("name"), spec_path, "name")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise bad(f"{spec_path}.schema", "required: a JSON Schema object")
    return {"type": "json_schema", "schema": schema}, False


# -- writers


def max_tokens(body: dict[str, Any], limit: int | None) -> int:
    value = body.get("max_tokens")
    if value is None:
        raise bad("max_tokens", "field required")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad("max_tokens", "must be an integer of at least 1")
    if limit is not None and limit >= 1:
        return min(value, limit)
    return value


def stop_sequences(value: Any, most: int) -> list[str]:
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
    if len(stops) > most:
        log.debug("kept %d of %d stop sequences", most, len(stops))
    return stops[:most]


def sampling(body: dict[str, Any]) -> dict[str, int | float]:
    """``temperature`` and ``top_p``, those given."""
    out: dict[str, int | float] = {}
    for name in ("temperature", "top_p"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(name, "must be a number")
        out[name] = value
    return out


def output_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the reply must follow (None: free text)."""
    output_config = body.get("output_config")
    fmt = output_config.get("format") if isinstance(output_config, dict) else None
    if fmt is None:
        fmt = body.get("output_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("schema")
    return schema if isinstance(schema, dict) else None


def user_id(body: dict[str, Any]) -> str | None:
    """``metadata.user_id`` (None: not given, or empty)."""
    metadata = body.get("metadata")
    value = metadata.get("user_id") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


def openai_user(value: str) -> str:
    """A user id as an OpenAI ``user`` every known upstream accepts."""
    if _SAFE_USER.fullmatch(value):
        return value
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
