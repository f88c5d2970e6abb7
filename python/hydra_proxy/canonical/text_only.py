"""Images before a model that cannot read them: each is replaced by a short text saying an
image was left out, so that the conversation goes on instead of failing on every later
turn (which resends the image) with the upstream's 400.

`without_images` works on the canonical request (an Anthropic Messages request: image
blocks in user turns and in tool results); `without_openai_images` on the client's own
request of an OpenAI protocol passed through (Chat ``image_url`` parts, Responses
``input_image`` parts, and such parts in a Responses ``function_call_output``). The input
is never modified: the messages that held an image are copied. The placeholder is the same
text every time, so the prefix of later turns stays the same.
"""

from __future__ import annotations

from typing import Any

__all__ = ["IMAGE_PLACEHOLDER", "without_images", "without_openai_images"]

IMAGE_PLACEHOLDER = (
    "[An image was left out here: the model serving this request cannot read images.]"
)


def _blocks_without_images(blocks: list[Any]) -> tuple[list[Any], int]:
    out: list[Any] = []
    count = 0
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "image":
            placeholder: dict[str, Any] = {"type": "text", "text": IMAGE_PLACEHOLDER}
            if "cache_control" in block:
                placeholder["cache_control"] = block["cache_control"]
            out.append(placeholder)
            count += 1
        elif (
            isinstance(block, dict)
            and block.get("type") == "tool_result"
            and isinstance(block.get("content"), list)
        ):
            content, inner = _blocks_without_images(block["content"])
            out.append({**block, "content": content} if inner else block)
            count += inner
        else:
            out.append(block)
    return out, count


def without_images(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The canonical request with every image replaced by `IMAGE_PLACEHOLDER`, and how many
    there were (0: `body` itself is returned)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, 0
    out: list[Any] = []
    count = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            blocks, found = _blocks_without_images(content)
            if found:
                message = {**message, "content": blocks}
                count += found
        out.append(message)
    return ({**body, "messages": out}, count) if count else (body, 0)


_OPENAI_IMAGES = {"image_url": "text", "input_image": "input_text"}


def _parts_without_images(parts: list[Any]) -> tuple[list[Any], int]:
    out: list[Any] = []
    count = 0
    for part in parts:
        ptype = part.get("type") if isinstance(part, dict) else None
        if ptype in _OPENAI_IMAGES:
            out.append({"type": _OPENAI_IMAGES[ptype], "text": IMAGE_PLACEHOLDER})
            count += 1
        else:
            out.append(part)
    return out, count


def without_openai_images(body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A Chat (``messages``) or Responses (``input``) request with every image part
    replaced by a text part of `IMAGE_PLACEHOLDER`, and how many there were."""
    field = "messages" if isinstance(body.get("messages"), list) else "input"
    items = body.get(field)
    if not isinstance(items, list):
        return body, 0
    out: list[Any] = []
    count = 0
    for item in items:
        if isinstance(item, dict):
            for key in ("content", "output"):
                value = item.get(key)
                if isinstance(value, list):
                    parts, found = _parts_without_images(value)
                    if found:
                        item = {**item, key: parts}
                        count += found
        out.append(item)
    return ({**body, field: out}, count) if count else (body, 0)
