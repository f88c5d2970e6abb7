"""Loading the Responses / Codex / Anthropic recordings the Responses tests use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "fixtures"
RESPONSES = FIXTURES / "responses"
CODEX = FIXTURES / "codex"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def codex_first_turn() -> dict[str, Any]:
    body: dict[str, Any] = load(CODEX / "request-exec-first-turn.json")
    return body


def request_recordings() -> dict[str, dict[str, Any]]:
    """name -> request body of every recorded Responses request."""
    return {path.name: load(path)["body"] for path in sorted(RESPONSES.glob("*.request.json"))}


def response_recordings() -> dict[str, dict[str, Any]]:
    """name -> every recorded (successful) Responses ``response`` object."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(RESPONSES.glob("*.json")):
        if path.name.endswith(".request.json"):
            continue
        data = load(path)
        body = data.get("body", data) if isinstance(data, dict) else data
        if isinstance(body, dict) and body.get("object") == "response":
            out[path.name] = body
    return out


def error_recordings() -> dict[str, dict[str, Any]]:
    """name -> every recorded Responses HTTP error body."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(RESPONSES.glob("*.json")):
        data = load(path)
        body = data.get("body", data) if isinstance(data, dict) else data
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            out[path.name] = body
    return out


def _messages_in(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if isinstance(value, dict):
        if value.get("type") == "message" and value.get("role") == "assistant":
            return [value]
        return [m for item in value.values() for m in _messages_in(item)]
    if isinstance(value, list):
        return [m for item in value for m in _messages_in(item)]
    return []


def anthropic_messages() -> dict[str, dict[str, Any]]:
    """name -> every non-streamed Anthropic Message recorded in tests/fixtures/anthropic."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((FIXTURES / "anthropic").glob("*.json")):
        for n, message in enumerate(_messages_in(load(path))):
            out[f"{path.name}#{n}"] = message
    return out


def anthropic_requests() -> dict[str, dict[str, Any]]:
    """name -> every recorded Anthropic Messages request body (SDK recordings, Claude Code)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((FIXTURES / "anthropic").glob("*.request.json")):
        body = load(path)["body"]
        if "messages" in body:
            out[path.name] = body
    for path in sorted((FIXTURES / "claude-code").glob("*.json")):
        out[path.name] = load(path)["body"]
    return out
