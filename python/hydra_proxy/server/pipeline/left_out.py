"""What the proxy left out of a request, said once per client session: a log line a user
can act on (a route that keeps what was left out) without one per turn."""

from __future__ import annotations

import logging
from collections import OrderedDict

__all__ = ["MAX_SESSIONS", "LeftOutNotices"]

log = logging.getLogger("hydra_proxy.left_out")

MAX_SESSIONS = 4096  # sessions remembered per worker (the least recently seen go)


class LeftOutNotices:
    """Logs, once per session and provider, what was left out of its requests: images a
    text-only provider cannot read, a web search tool it cannot run, thinking on a tool
    turn whose signed thinking the client did not bring back, output tokens above the
    model's limit."""

    def __init__(self) -> None:
        self._told: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def _tell(self, what: str, session: str, provider: str, message: str, *args: object) -> bool:
        """Log `message` unless this session was told of `what` for `provider` already;
        whether it was logged."""
        key = (what, session, provider)
        if key in self._told:
            self._told.move_to_end(key)
            return False
        self._told[key] = None
        while len(self._told) > MAX_SESSIONS:
            self._told.popitem(last=False)
        log.warning(message, *args)
        return True

    def images(self, session: str, provider: str, count: int) -> bool:
        """Log, once per session and provider, that images were left out."""
        return self._tell(
            "images",
            session,
            provider,
            "%d image(s) left out for provider %r, which cannot read images (vision = false); "
            "the session goes on with a placeholder (said once per session). Add an "
            "`images = true` route to a provider that reads them to keep them.",
            count,
            provider,
        )

    def output_limit(self, session: str, provider: str, asked: int, limit: int) -> bool:
        """Log, once per session and provider, that max_tokens was lowered to the limit."""
        return self._tell(
            "output_limit",
            session,
            provider,
            "max_tokens %d lowered to %d, the output limit of provider %r's model (said once "
            "per session); set the route's max_output to change it",
            asked,
            limit,
            provider,
        )

    def web_search(self, session: str, provider: str) -> bool:
        """Log, once per session and provider, that an offered web search was left out."""
        return self._tell(
            "web_search",
            session,
            provider,
            "the web_search tool was left out for provider %r, which cannot run it; the "
            "model answers without searching (said once per session). Add a "
            "`server_tools = true` route to an Anthropic, OpenAI Responses, Gemini or "
            "OpenRouter provider to keep it.",
            provider,
        )

    def thinking_off(self, session: str, provider: str, why: str) -> bool:
        """Log, once per session and provider, that a tool turn went without thinking."""
        return self._tell(
            "thinking",
            session,
            provider,
            "thinking turned off for a tool turn to provider %r: Anthropic requires the "
            "turn that called the tool to start with its signed thinking, and %s (said once "
            "per session).",
            provider,
            why,
        )


NOTICES = LeftOutNotices()
