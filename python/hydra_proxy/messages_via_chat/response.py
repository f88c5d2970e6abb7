"""Compatibility re-export: the Chat response reader moved to `hydra_proxy.chat.response.reader`.

Kept only until the server imports the new path; delete it then.
"""

from ..chat.response.reader import message_from_chat_completion
from ..chat.tool_arguments import RAW_ARGUMENTS_KEY, tool_input_from_arguments

__all__ = ["RAW_ARGUMENTS_KEY", "message_from_chat_completion", "tool_input_from_arguments"]
