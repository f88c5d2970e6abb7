"""Compatibility re-export for the stream transducer: the mappings moved to `chat.mapping`.

Delete once messages_via_chat/stream.py imports `hydra_proxy.chat.mapping`.
"""

from ..chat.mapping import input_tokens, stop_reason

__all__ = ["input_tokens", "stop_reason"]
