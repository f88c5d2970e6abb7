"""The app's model-request entries (hydra_proxy.server.app.MODEL_ENTRIES) as test
parameters, and how each entry's client reads an error: a rule that holds for every model
request is tested over all of them, so an entry added later cannot be left out."""

from __future__ import annotations

from typing import Any

import pytest

from hydra_proxy.server.app import MODEL_ENTRIES, ModelEntry

# count_tokens of each protocol reads a body like a model request's (but not its reply).
COUNT_PATHS = ("/v1/messages/count_tokens", "/v1beta/models/{model}:countTokens")


def entry_id(entry: ModelEntry) -> str:
    return entry.path.replace("{model}", "M")


ENTRIES = [pytest.param(entry, id=entry_id(entry)) for entry in MODEL_ENTRIES]
STREAMED = [
    pytest.param(entry, id=entry_id(entry)) for entry in MODEL_ENTRIES if entry.streams is not False
]
"""The entries that can stream (a Gemini non-streamed method cannot)."""


def entry_for(path: str) -> ModelEntry:
    """The entry a concrete path (or a count_tokens path) belongs to."""
    bare = path.split("?")[0]
    for entry in MODEL_ENTRIES:
        head, _, tail = entry.path.partition("{model}")
        if bare == entry.path or (tail and bare.startswith(head) and bare.endswith(tail)):
            return entry
    if bare.endswith(":countTokens"):
        return next(e for e in MODEL_ENTRIES if e.protocol == "gemini")
    return MODEL_ENTRIES[0]  # /v1/messages/count_tokens


def body_for(path: str, model: str = "gpt-4o", **extra: Any) -> dict[str, Any]:
    """A valid body for `path` (any entry's, or a count_tokens path)."""
    _, body = entry_for(path).request(model)
    if path.split("?")[0].endswith(":countTokens"):
        body.pop("model", None)
    return {**body, **extra}


def paths(model: str = "gpt-4o", *, stream: bool = False) -> list[Any]:
    """Every entry's concrete path for `model`, as parameters."""
    return [
        pytest.param(entry.request(model, stream=stream)[0], id=entry_id(entry))
        for entry in MODEL_ENTRIES
    ]


def error_of(path: str, payload: Any) -> dict[str, Any]:
    """The error object of any entry's error reply, its shape checked: Anthropic's on
    /v1/messages*, Gemini's ({code, message, status}) on the Gemini API's paths, OpenAI's
    (message, type, param, code) elsewhere."""
    assert isinstance(payload, dict)
    error = payload["error"]
    assert isinstance(error, dict)
    if path.startswith("/v1/messages"):
        assert payload["type"] == "error" and set(error) == {"type", "message"}
    elif entry_for(path).protocol == "gemini" and path != "/v1/messages/count_tokens":
        assert set(error) == {"code", "message", "status"}
    else:
        assert set(error) == {"message", "type", "param", "code"}
    return error
