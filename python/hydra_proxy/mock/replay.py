"""Replaying recorded provider responses (the files in ``fixtures/``).

- ``.sse`` (and any other extension not listed below): the raw HTTP body, sent
  byte-for-byte; events (split after each blank line) are the pacing unit.
- ``.jsonl``: one SSE ``data:`` payload per line with the framing lost (the vercel/ai
  ``*.chunks.txt`` corpus). Re-framed from the verbatim line bytes: payloads with a
  ``"type"`` field are Anthropic events (``event: <type>\\ndata: <line>\\n\\n``); Gemini
  payloads (``candidates`` / ``usageMetadata``) become ``data: <line>\\n\\n``; anything
  else is OpenAI-shaped (``data: <line>\\n\\n``, then ``data: [DONE]\\n\\n``).
- ``.json``: a recorded non-streaming answer. ``{"status": N, "body": {...}}`` (the
  ``*.response.json`` files) answers with that status and body; a Google error body
  ``{"error": {"code": N, "status": ...}}`` (``vercel-google-429-retry-info.json``) with
  status N; any other JSON document is sent as a 200 ``application/json`` body.

Scripted names are resolved inside the ``--fixtures`` directory only (the mock has no
authentication, so its control API must not read arbitrary files): ``chat/x.sse``,
``x.sse`` or ``x`` (searched recursively, extensions ``.sse``/``.jsonl``/``.json`` tried),
or an absolute path that lies inside that directory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from .response import JSON_CONTENT_TYPE, SSE_HEADERS, Reply

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_EXTENSIONS = (".sse", ".jsonl", ".json")
MAX_REPLAY_BYTES = 256 * 1024 * 1024


class ReplayError(ValueError):
    """A replay name that does not resolve, or a file that cannot be replayed."""


def split_events(body: bytes) -> list[bytes]:
    """``body`` cut after every SSE event terminator; the pieces join back to ``body``."""
    pieces: list[bytes] = []
    start = 0
    for m in _EVENT_END.finditer(body):
        pieces.append(body[start : m.end()])
        start = m.end()
    if start < len(body):
        pieces.append(body[start:])
    return pieces


def reframe_jsonl(data: bytes) -> list[bytes]:
    """SSE events for a ``.jsonl`` file of data payloads (see the module docstring)."""
    events: list[bytes] = []
    openai_shaped = False
    for raw_line in data.splitlines():
        line = raw_line.strip()
        if not line:
            continue
        try:
            payload: Any = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ReplayError(f"not a JSON line: {line[:80]!r}") from exc
        kind = payload.get("type") if isinstance(payload, dict) else None
        if isinstance(kind, str):
            events.append(b"event: " + kind.encode() + b"\ndata: " + line + b"\n\n")
        else:
            gemini = isinstance(payload, dict) and (
                "candidates" in payload or "usageMetadata" in payload
            )
            openai_shaped = openai_shaped or not gemini
            events.append(b"data: " + line + b"\n\n")
    if openai_shaped:
        events.append(b"data: [DONE]\n\n")
    return events


def _google_error_code(doc: dict[str, Any]) -> int | None:
    error = doc.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("status"), str):
        return None
    code = error.get("code")
    return code if isinstance(code, int) and 400 <= code <= 599 else None


def load_reply(path: Path) -> Reply:
    """The reply that replays ``path`` (uncached; see :class:`ReplayCache`)."""
    try:
        if path.stat().st_size > MAX_REPLAY_BYTES:
            raise ReplayError(f"{path.name} is larger than {MAX_REPLAY_BYTES} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise ReplayError(f"cannot read {path.name}: {exc.strerror}") from exc
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return Reply(200, list(SSE_HEADERS), reframe_jsonl(data))
    if suffix == ".json":
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ReplayError(f"{path.name} is not valid JSON") from exc
        status = 200
        if isinstance(doc, dict) and isinstance(doc.get("status"), int) and "body" in doc:
            status = doc["status"]
            data = orjson.dumps(doc["body"])
        elif isinstance(doc, dict):
            status = _google_error_code(doc) or 200
        headers = [JSON_CONTENT_TYPE, (b"content-length", str(len(data)).encode())]
        return Reply(status, headers, [data])
    return Reply(200, list(SSE_HEADERS), split_events(data))


class ReplayCache:
    """Resolves replay names and keeps parsed fixtures (keyed by path, size and mtime)."""

    def __init__(self, fixtures: Path | None, trusted: Path | None = None, max_entries: int = 256):
        self.fixtures = fixtures.resolve() if fixtures is not None else None
        self.trusted = trusted.resolve() if trusted is not None else None
        self.max_entries = max_entries
        self._replies: dict[tuple[Path, int, int], Reply] = {}

    def resolve(self, name: str) -> Path:
        """The file a scripted replay name designates (inside ``--fixtures``)."""
        if self.trusted is not None and name in (str(self.trusted), self.trusted.name):
            return self.trusted
        if self.fixtures is None:
            raise ReplayError(
                "replaying a named fixture needs the mock started with --fixtures DIR"
            )
        root = self.fixtures
        path = Path(name)
        candidate = path.resolve() if path.is_absolute() else (root / path).resolve()
        if not candidate.is_relative_to(root):
            raise ReplayError(f"replay {name!r} is outside the --fixtures directory")
        if candidate.is_file():
            return candidate
        for ext in _EXTENSIONS:
            with_ext = candidate.with_name(candidate.name + ext)
            if with_ext.is_file():
                return with_ext
        if len(path.parts) == 1:
            names = [path.name, *(path.name + ext for ext in _EXTENSIONS)]
            found = sorted(p for n in names for p in root.rglob(n) if p.is_file())
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                rel = ", ".join(str(p.relative_to(root)) for p in found)
                raise ReplayError(f"replay {name!r} is ambiguous: {rel}")
        raise ReplayError(f"no fixture named {name!r} in the --fixtures directory")

    def reply(self, path: Path) -> Reply:
        try:
            st = path.stat()
        except OSError as exc:
            raise ReplayError(f"cannot read {path.name}: {exc.strerror}") from exc
        key = (path, st.st_size, st.st_mtime_ns)
        cached = self._replies.get(key)
        if cached is None:
            cached = load_reply(path)
            if len(self._replies) >= self.max_entries:
                self._replies.clear()
            self._replies[key] = cached
        return cached
