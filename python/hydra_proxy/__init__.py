"""hydra-proxy: a translating LLM proxy with a native streaming core.

Anthropic Messages clients (Claude Code) on OpenAI-compatible models, and OpenAI Chat clients
(Zed, the OpenAI SDKs) on Claude. The transducers here are the protocol core: free of I/O,
one object per response stream, `feed(bytes) -> bytes` and `finish() -> bytes`.
"""

from __future__ import annotations

from .transducers import MessagesViaChatStream as PyMessagesViaChatStream

__version__ = "0.1.0"

__all__ = ["PyMessagesViaChatStream", "__version__"]
