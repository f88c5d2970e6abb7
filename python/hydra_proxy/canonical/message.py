"""The canonical non-streamed reply: an Anthropic Message, as the response readers write
it (upstream reply -> Message) and the response writers read it (Message -> client reply).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ProxyError

__all__ = ["anthropic_message", "not_an_object", "tool_use_id", "typed_objects", "url_citations"]


def anthropic_message(
    message_id: str,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, int],
) -> dict[str, Any]:
    """An Anthropic Message (``stop_sequence`` is null: no upstream says which one matched)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def tool_use_id(message_id: str, index: int) -> str:
    """The deterministic id of a call the upstream gave none (or none Anthropic accepts):
    the same reply always gets the same ids."""
    return f"toolu_{message_id.removeprefix('msg_')}_{index}"


def not_an_object(upstream: str = "upstream") -> ProxyError:
    """A reply body that is not a JSON object: a 500, which clients retry."""
    return ProxyError(
        500, f"{upstream} returned a response that is not a JSON object", error_type="api_error"
    )


def typed_objects(value: Any) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(type, object) of each object of a reply's array (a Message's content, a response's
    output), read leniently: what is not an object is skipped, and a value that is not an
    array holds none, so what an upstream adds or gets wrong does not lose the rest."""
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict):
            yield item.get("type"), item


def url_citations(citations: Any) -> list[tuple[str, str]]:
    """(url, title) of each citation of a text block that carries a URL (web search)."""
    if not isinstance(citations, list):
        return []
    out = []
    for citation in citations:
        if not isinstance(citation, dict):
            continue
        url = citation.get("url")
        if not isinstance(url, str) or not url:
            continue
        title = citation.get("title")
        out.append((url, title if isinstance(title, str) else ""))
    return out
