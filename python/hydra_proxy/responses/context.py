"""What a Responses reply needs to know about its request.

A ``response`` object echoes parts of the request (``tools``, ``tool_choice``,
``instructions``, ``reasoning``...; the openai SDK requires several of them), and the
output depends on it: tool names are restored through `ToolNames`, reasoning items carry
``encrypted_content`` only when ``include`` asks for it, and a summary only when
``reasoning.summary`` asks for one. The request reader builds this once; the response
writer and the stream encoder read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .tools import ToolNames

__all__ = ["ENCRYPTED_REASONING", "ResponsesContext"]

ENCRYPTED_REASONING = "reasoning.encrypted_content"


@dataclass(frozen=True)
class ResponsesContext:
    model: str  # the model name the client asked for (echoed)
    tool_names: ToolNames = field(default_factory=ToolNames)
    include_encrypted: bool = False  # include has "reasoning.encrypted_content"
    summary: bool = False  # reasoning.summary is auto/concise/detailed
    instructions: Any = None
    tools: list[Any] = field(default_factory=list)  # as the client sent them
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] = field(default_factory=lambda: {"format": {"type": "text"}})
    metadata: dict[str, Any] = field(default_factory=dict)
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None
    user: str | None = None

    def echo(self) -> dict[str, Any]:
        """The request fields a ``response`` object repeats (the SDK requires some)."""
        out: dict[str, Any] = {
            "instructions": self.instructions,
            "max_output_tokens": self.max_output_tokens,
            "metadata": self.metadata,
            "parallel_tool_calls": self.parallel_tool_calls,
            "previous_response_id": None,
            "prompt_cache_key": self.prompt_cache_key,
            "reasoning": self.reasoning or {"effort": None, "summary": None},
            "safety_identifier": self.safety_identifier,
            "store": False,
            "temperature": self.temperature,
            "text": self.text,
            "tool_choice": self.tool_choice,
            "tools": self.tools,
            "top_p": self.top_p,
            "truncation": "disabled",
        }
        if self.user is not None:
            out["user"] = self.user
        return out
