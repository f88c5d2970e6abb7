"""Where a Gemini request goes and with which headers, as data (the body serves both the
streamed and the non-streamed endpoint)."""

from __future__ import annotations

import re

__all__ = ["gemini_headers", "gemini_path"]

_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def gemini_path(model: str, *, stream: bool) -> str:
    """The request path below the API base (``.../v1beta/``) for `model`.

    Raises ValueError for a model name that is not a plain Gemini model id (it goes into
    the URL path).
    """
    resource = (
        model if model.startswith("tunedModels/") else f"models/{model.removeprefix('models/')}"
    )
    if not _MODEL_NAME.fullmatch(resource.split("/", 1)[1]):
        raise ValueError(f"not a Gemini model name: {model!r}")
    if stream:
        return f"{resource}:streamGenerateContent?alt=sse"
    return f"{resource}:generateContent"


def gemini_headers(api_key: str) -> list[tuple[str, str]]:
    """The request headers (the key goes in ``x-goog-api-key``, never in the URL)."""
    return [("content-type", "application/json"), ("x-goog-api-key", api_key)]
