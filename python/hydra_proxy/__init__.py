"""hydra-proxy: a translating LLM proxy with a native streaming core.

Anthropic Messages clients (Claude Code) on OpenAI-compatible models, and OpenAI Chat clients
(Zed, the OpenAI SDKs) on Claude. The protocol core is free of I/O: `canonical` is the
request every client protocol is read into and every upstream protocol written from, and
`transducers` the stream state machines, one object per response stream,
`feed(bytes) -> bytes` and `finish() -> bytes`.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
