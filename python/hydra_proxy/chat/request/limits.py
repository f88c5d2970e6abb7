"""OpenAI's request limits, which the Chat reader and writer both keep."""

from __future__ import annotations

__all__ = ["MAX_STOP_SEQUENCES"]

# OpenAI accepts at most 4 stop sequences.
MAX_STOP_SEQUENCES = 4
