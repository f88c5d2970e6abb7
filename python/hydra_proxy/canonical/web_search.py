"""Web search, the one server tool the proxy carries to upstreams of every kind.

In the canonical request it is Anthropic's own tool, ``{"type": "web_search_20250305",
"name": "web_search", ...}`` (Claude Code's WebSearch sends it as it is; Codex's
``web_search`` tool and Chat's ``web_search_options`` are read into it). Who can run it:

- an Anthropic upstream (passed through, or a Messages upstream behind a translation);
- the OpenAI Responses API: the ``web_search`` tool;
- Gemini: ``google_search`` grounding;
- OpenRouter (a Chat upstream): its web plugin, ``plugins: [{"id": "web"}]``.

Any other upstream cannot. A request that asks for a search (Claude Code's WebSearch
request, which carries that tool alone; a tool choice forcing it; Chat's
``web_search_options``) is refused before it is sent, naming the tool and the route
setting that sends such requests elsewhere (`refusal`): the client learns why, rather than
getting an answer without the search. A Responses client that only offers the tool among
its own (Codex declares ``web_search`` on every turn, whether or not the model will
search) is served without it (`offered_only`): refusing would stop every Codex turn on
such an upstream, and the server says once per session what was left out and which
setting keeps it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..errors import ProxyError, invalid_request
from .tools import is_web_search, without_web_search

log = logging.getLogger(__name__)

# The version the proxy writes when it reads another protocol's web search into the
# canonical request.
WEB_SEARCH_TOOL: dict[str, Any] = {"type": "web_search_20250305", "name": "web_search"}
ROUTE_SETTING = "server_tools"
OPENROUTER_HOST = "openrouter.ai"
# Responses server tool types that are web search.
RESPONSES_WEB_SEARCH = ("web_search", "web_search_preview")


def offered_only(request: Mapping[str, Any]) -> bool:
    """Whether web search is one tool offered among others, not asked for: other tools
    beside it and no tool choice naming it."""
    tools = request.get("tools")
    if not isinstance(tools, list) or not any(not is_web_search(tool) for tool in tools):
        return False
    choice = request.get("tool_choice")
    return not (isinstance(choice, Mapping) and choice.get("name") == WEB_SEARCH_TOOL["name"])


def _host(base_url: str) -> str:
    return (urlsplit(base_url).hostname or "").lower()


def is_openrouter(base_url: str) -> bool:
    host = _host(base_url)
    return host == OPENROUTER_HOST or host.endswith("." + OPENROUTER_HOST)


def runs_web_search(kind: str, base_url: str) -> bool:
    """Whether an upstream of this kind at this URL runs web search itself."""
    if kind in ("anthropic", "responses", "gemini"):
        return True
    return kind == "chat" and is_openrouter(base_url)


def runs_chat_web_search(base_url: str) -> bool:
    """Whether a Chat upstream takes ``web_search_options`` as a client sends it: OpenAI
    itself (its search models), or OpenRouter (with its web plugin)."""
    return is_openrouter(base_url) or _host(base_url) == "api.openai.com"


def client_form(client: str) -> str:
    """How the client asked for web search, in its own words."""
    if client == "responses":
        return "the web_search tool"
    if client == "chat":
        return "web_search_options"
    return "the web_search server tool (WebSearch)"


def refusal(client: str, provider: str, kind: str) -> ProxyError:
    """The 400 for a request carrying web search routed to an upstream that cannot run it."""
    message = (
        f"{client_form(client)} cannot run on provider {provider!r} ({kind} upstream): "
        "web search runs only on an Anthropic, OpenAI Responses, Gemini or OpenRouter "
        f"upstream. Route these requests to one with a route `{ROUTE_SETTING} = true` "
        "in the proxy's config"
    )
    if client == "responses":
        message += ', or turn Codex\'s search off (web_search = "disabled" in its config)'
    return invalid_request(message + ".", "web_search_options" if client == "chat" else "tools")


# -- the canonical tool in each upstream's form


def _domains(tool: Mapping[str, Any], key: str) -> list[str] | None:
    value = tool.get(key)
    if isinstance(value, list) and value and all(isinstance(d, str) for d in value):
        return list(value)
    return None


def responses_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses ``web_search`` tool: allowed domains and the user's location carried
    (a use limit has no Responses form: its only cap counts every tool call; blocked
    domains have none either, and are logged as left out)."""
    out: dict[str, Any] = {"type": "web_search"}
    if _domains(tool, "blocked_domains") is not None:
        log.info("web search: blocked_domains left out (the Responses API has no such filter)")
    allowed = _domains(tool, "allowed_domains")
    if allowed is not None:
        out["filters"] = {"allowed_domains": allowed}
    location = tool.get("user_location")
    if isinstance(location, Mapping):
        place = {k: location[k] for k in ("city", "region", "country", "timezone") if k in location}
        out["user_location"] = {"type": "approximate", **place}
    return out


def gemini_tool() -> dict[str, Any]:
    """Gemini's grounding with Google Search (it takes no options)."""
    return {"google_search": {}}


def openrouter_plugin(tool: Mapping[str, Any]) -> dict[str, Any]:
    """OpenRouter's web plugin; a use limit becomes its result count."""
    plugin: dict[str, Any] = {"id": "web"}
    uses = tool.get("max_uses")
    if isinstance(uses, int) and not isinstance(uses, bool) and uses > 0:
        plugin["max_results"] = uses
    return plugin


def without_forced_search(body: Mapping[str, Any], search: Mapping[str, Any]) -> dict[str, Any]:
    """The request without its web search tool, for writers that turn search on elsewhere
    than in the tools (a choice forcing the search goes too: it is on either way)."""
    out = dict(body)
    out["tools"] = without_web_search(list(body.get("tools") or []))
    choice = out.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("name") == search.get("name"):
        out.pop("tool_choice")
    return out


# -- the other protocols' web search, read into the canonical tool


def web_search_from_options(options: object) -> dict[str, Any] | None:
    """Chat's ``web_search_options`` as the canonical tool (None: not asked for); its
    approximate location is carried, the context size has no Anthropic form."""
    if not isinstance(options, Mapping):
        return None
    tool = dict(WEB_SEARCH_TOOL)
    location = options.get("user_location")
    approximate = location.get("approximate") if isinstance(location, Mapping) else None
    if isinstance(approximate, Mapping):
        place = {
            k: v
            for k in ("city", "region", "country", "timezone")
            if isinstance(v := approximate.get(k), str)
        }
        if place:
            tool["user_location"] = {"type": "approximate", **place}
    return tool
