"""What the proxy left out of a request, said once per client session: a log line a user
can act on (route images to a model that reads them) without one per turn."""

from __future__ import annotations

import logging
from collections import OrderedDict

__all__ = ["MAX_SESSIONS", "LeftOutNotices"]

log = logging.getLogger("hydra_proxy.left_out")

MAX_SESSIONS = 4096  # sessions remembered per worker (the least recently seen go)


class LeftOutNotices:
    """Logs, once per session and provider, that images were replaced by a placeholder."""

    def __init__(self) -> None:
        self._told: OrderedDict[tuple[str, str], None] = OrderedDict()

    def images(self, session: str, provider: str, count: int) -> bool:
        """Log the notice unless this session was told already; whether it was logged."""
        key = (session, provider)
        if key in self._told:
            self._told.move_to_end(key)
            return False
        self._told[key] = None
        while len(self._told) > MAX_SESSIONS:
            self._told.popitem(last=False)
        log.warning(
            "%d image(s) left out for provider %r, which cannot read images (vision = false); "
            "the session goes on with a placeholder (said once per session). Add an "
            "`images = true` route to a provider that reads them to keep them.",
            count,
            provider,
        )
        return True

    def web_search(self, session: str, provider: str) -> bool:
        """Log, once per session and provider, that an offered web search was left out."""
        key = (session, provider + "#web_search")
        if key in self._told:
            self._told.move_to_end(key)
            return False
        self._told[key] = None
        while len(self._told) > MAX_SESSIONS:
            self._told.popitem(last=False)
        log.warning(
            "the web_search tool was left out for provider %r, which cannot run it; the "
            "model answers without searching (said once per session). Add a "
            "`server_tools = true` route to an Anthropic, OpenAI Responses, Gemini or "
            "OpenRouter provider to keep it.",
            provider,
        )
        return True


NOTICES = LeftOutNotices()
