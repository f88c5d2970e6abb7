"""Responses content parts -> canonical content blocks and texts.

User parts (and the parts of a call's ``output``): ``input_text`` (``output_text`` too) ->
text (whitespace-only dropped), ``input_image`` with ``image_url`` (a ``data:`` or http(s)
URL) -> an image, ``input_file`` with ``file_data`` -> a document or image as the Chat
reader reads a file (`canonical.media`), with ``file_url`` -> a URL document; ``file_id``
(OpenAI's Files API) and ``input_audio`` are a 400. System, developer and assistant
messages take text parts only (`read_texts`): ``input_text``, and for the assistant
``output_text`` and ``refusal`` (its text).
"""

from __future__ import annotations

from typing import Any

from ....canonical.content import Block
from ....canonical.fields import bad, part_text, part_type, type_name
from ....canonical.media import file_block, image_block_from_url

__all__ = ["input_part", "read_texts"]


def input_part(part: Any, path: str) -> Block | None:
    """A user (or call output) content part as a canonical block; None for blank text."""
    ptype = part_type(part, path)
    if ptype in ("input_text", "output_text"):
        text = part_text(part, path, "text")
        return {"type": "text", "text": text} if text.strip() else None
    if ptype == "input_image":
        url = part.get("image_url")
        if url is None and part.get("file_id") is not None:
            raise bad(
                f"{path}.file_id",
                "uploaded OpenAI files cannot be read through this proxy; "
                "send image_url with a data: URL instead",
            )
        if not isinstance(url, str) or not url:
            raise bad(f"{path}.image_url", "required: a data: or https URL")
        return image_block_from_url(url, f"{path}.image_url")
    if ptype == "input_file":
        url = part.get("file_url")
        if part.get("file_data") is None and isinstance(url, str) and url:
            if url.split(":", 1)[0].lower() not in ("http", "https"):
                raise bad(f"{path}.file_url", "must be an http(s) URL")
            return {"type": "document", "source": {"type": "url", "url": url}}
        return file_block(part, path)
    if ptype == "input_audio":
        raise bad(f"{path}.type", "Claude does not accept audio input")
    raise bad(f"{path}.type", f"unsupported content part type {ptype!r}")


def read_texts(content: Any, path: str, allowed: tuple[str, ...], role: str) -> list[str]:
    """The texts of a message whose content is a string or text parts of `allowed` types."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise bad(
            f"{path}.content",
            f"must be a string or an array of content parts, got {type_name(content)}",
        )
    texts: list[str] = []
    for j, part in enumerate(content):
        part_path = f"{path}.content[{j}]"
        ptype = part_type(part, part_path)
        if ptype not in allowed:
            raise bad(
                f"{part_path}.type",
                f"{role} messages take {', '.join(allowed)} parts, not {ptype!r}",
            )
        texts.append(part_text(part, part_path, "refusal" if ptype == "refusal" else "text"))
    return texts
