"""Routes: which provider (or fallback chain of providers) serves a request, and how.

A route matches on the requested model name (a glob) and on request traits
(`RequestTraits`); routes are tried in order and the first that applies wins; a request
no route claims goes to the target provider. `request_traits` and `decide` are pure.

The subagent trait comes from what Claude Code 2.1.328 really sends on a subagent's
requests (tests/fixtures/claude-code/request-subagent.json, captured from the CLI running
an agent definition through its Agent tool): an ``x-claude-code-agent-id`` request header,
and ``cc_is_subagent=true;`` in the ``x-anthropic-billing-header`` first system block. The
lead's own requests carry neither. The header is the signal that survives
``CLAUDE_CODE_ATTRIBUTION_HEADER=false`` (which removes the billing block); either one
marks a subagent. A subagent whose definition names a model (``model: sonnet``) also
arrives with that model name, which a `match` glob can route on. The teammate trait is
the header alone: an agent team's teammates send it (the lead does not), so a route can
send the teammates of a team to another provider.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..canonical.tools import web_search_tool

if TYPE_CHECKING:
    from .providers import Provider

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# A tool-less call asking for at most this many tokens is background work (titles,
# summaries, Claude Code's warmup call).
BACKGROUND_MAX_TOKENS = 1024
SUBAGENT_HEADER = "x-claude-code-agent-id"
SUBAGENT_MARKER = "cc_is_subagent=true"


def glob_problem(pattern: str) -> str | None:
    """Why a `match` glob is invalid (None: it is valid)."""
    if not pattern:
        return "an empty glob matches nothing"
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close < 0:
                return f"unclosed '[' at position {i + 1}: write '[[]' to match a literal '['"
            i = close
        i += 1
    try:
        re.compile(fnmatch.translate(pattern))
    except re.error as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class ChainLink:
    """One link of a fallback chain: a provider and, optionally, its own model name
    (default: the route's model, else the requested name)."""

    provider: str
    model: str | None = None


@dataclass(frozen=True)
class RouteOptions:
    """How a route shapes the upstream request and what it reports."""

    spoof_model: str | None = None
    max_tokens_limit: int | None = None
    # A fixed effort for every request, or a map from the requested effort.
    effort: str | None = None
    effort_map: tuple[tuple[str, str], ...] = ()
    context_window: int | None = None
    max_output: int | None = None
    # The upstream reads images (None: as its provider's `vision` column says).
    vision: bool | None = None

    def map_effort(self, requested: str | None) -> str | None:
        """The effort to ask the upstream for (None: leave the request's as it is)."""
        if self.effort is not None:
            return self.effort
        if requested is not None:
            mapped = dict(self.effort_map).get(requested)
            if mapped is not None:
                return mapped
        return requested


@dataclass(frozen=True)
class RequestTraits:
    """What routing may look at in a request. `input_tokens` is computed on first use
    only (a rule with `long_context` asks for it)."""

    model: str
    client: str = "anthropic"
    tools: bool = False
    max_tokens: int | None = None
    thinking: bool = False
    effort: str | None = None
    images: bool = False
    subagent: bool = False
    teammate: bool = False  # the request carries an agent id (x-claude-code-agent-id)
    # Web search, a server tool only some upstreams run (canonical.web_search).
    server_tools: bool = False
    estimate: Callable[[], int] | None = field(default=None, repr=False, compare=False)
    bound: Callable[[], int] | None = field(default=None, repr=False, compare=False)

    @property
    def background(self) -> bool:
        return (
            not self.tools
            and self.max_tokens is not None
            and self.max_tokens <= BACKGROUND_MAX_TOKENS
        )

    @cached_property
    def input_tokens(self) -> int:
        return self.estimate() if self.estimate is not None else 0

    @cached_property
    def input_bound(self) -> int:
        """The input a limit reserves: the estimate, or the upper bound (tokens.input_bound)
        where the estimate's samples fall short of it."""
        bound = self.bound() if self.bound is not None else 0
        return max(self.input_tokens, bound)


def _list(value: Any) -> list[Any]:
    """A list field, or none: a malformed request gets its 400 from the reader, not here."""
    return value if isinstance(value, list) else []


def _blocks(content: object) -> Iterable[Mapping[str, Any]]:
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                yield block
                if block.get("type") == "tool_result":
                    yield from _blocks(block.get("content"))


_IMAGES = "messages with images"


def _any_image(messages: list[Any], memo: dict[Any, Any] | None) -> bool:
    """Whether a message holds an image (in a tool result too); `memo` keeps the answer for
    each message object, as the next request of the session holds the same ones."""
    if memo is None:
        return any(
            b.get("type") == "image"
            for m in messages
            if isinstance(m, dict)
            for b in _blocks(m.get("content"))
        )
    known: dict[int, tuple[Any, bool]] = memo.get(_IMAGES, {})
    seen: dict[int, tuple[Any, bool]] = {}
    for m in messages:
        if isinstance(m, dict):
            before = known.get(id(m))
            if before is not None and before[0] is m:
                seen[id(m)] = before
            else:
                has = any(b.get("type") == "image" for b in _blocks(m.get("content")))
                seen[id(m)] = (m, has)
    memo[_IMAGES] = seen
    return any(has for _, has in seen.values())


def _has_header(headers: Mapping[str, str] | Sequence[tuple[bytes, bytes]], name: str) -> bool:
    if isinstance(headers, Mapping):
        return any(k.lower() == name for k in headers)
    target = name.encode()
    return any(k.lower() == target for k, _ in headers)


def counted_once(count: Callable[[], int]) -> Callable[[], int]:
    """`count`, called at most once, its result kept: a request's token estimate, made only
    if a route or the stream asks (a closure costs a tenth of functools.cache's wrapper,
    made for every request)."""
    counted: list[int] = []

    def once() -> int:
        if not counted:
            counted.append(count())
        return counted[0]

    return once


def request_traits(
    request: Mapping[str, Any],
    *,
    client: str = "anthropic",
    headers: Mapping[str, str] | Sequence[tuple[bytes, bytes]] = (),
    estimate: Callable[[], int] | None = None,
    memo: dict[Any, Any] | None = None,
    bound: Callable[[], int] | None = None,
) -> RequestTraits:
    """The traits of a canonical (Anthropic Messages) request.

    `client`: the protocol the client spoke (anthropic, chat, responses); `headers`: the
    client's request headers (a mapping or ASGI pairs); `estimate`: the input-token
    estimate, called only if a route needs it (default: tokens.estimate_input_tokens);
    `memo`: what the session's previous request left (server/previous_turn.KeptRequest.memo);
    `bound`: the input's upper bound (default: tokens.input_bound of `request`).
    """
    model = request.get("model")
    thinking = request.get("thinking")
    output_config = request.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    max_tokens = request.get("max_tokens")
    images = _any_image(_list(request.get("messages")), memo)
    system = request.get("system")
    first_system = next(iter(_blocks(system)), None) if isinstance(system, list) else None
    marker = isinstance(first_system, dict) and SUBAGENT_MARKER in str(first_system.get("text"))
    if isinstance(system, str):
        marker = (
            system.startswith("x-anthropic-billing-header:")
            and SUBAGENT_MARKER in (system.split("\n", 1)[0])
        )
    teammate = _has_header(headers, SUBAGENT_HEADER)
    if estimate is None:

        def estimate() -> int:
            from ..tokens import estimate_input_tokens

            return estimate_input_tokens(dict(request))

    if bound is None:

        def bound() -> int:
            from ..tokens import input_bound

            return input_bound(dict(request))

    return RequestTraits(
        model=model if isinstance(model, str) else "",
        client=client,
        tools=bool(request.get("tools")),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        thinking=isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive"),
        effort=effort if isinstance(effort, str) else None,
        images=images,
        subagent=marker or teammate,
        teammate=teammate,
        server_tools=web_search_tool(request.get("tools")) is not None,
        estimate=estimate,
        bound=bound,
    )


# The conditions a route states as true or false, each a field of RequestTraits too.
_YES_NO_CONDITIONS = (
    "background",
    "thinking",
    "images",
    "subagent",
    "teammate",
    "server_tools",
)


@dataclass(frozen=True)
class Route:
    """An ordered routing rule. Field order keeps ``Route(match, provider, model,
    spoof_model, max_tokens_limit)`` as it always was."""

    match: str = "*"
    provider: str = ""
    model: str | None = None
    spoof_model: str | None = None
    max_tokens_limit: int | None = None
    # Tried in order after `provider` (connect errors, timeouts, 429, 5xx before the
    # first byte reaches the client).
    fallback: tuple[ChainLink, ...] = ()
    name: str | None = None
    # Conditions (None: any); all given ones must hold.
    background: bool | None = None
    thinking: bool | None = None
    images: bool | None = None
    subagent: bool | None = None
    teammate: bool | None = None
    long_context: int | None = None  # estimated input tokens above this
    client: str | None = None
    server_tools: bool | None = None
    # Options.
    effort: str | None = None
    effort_map: tuple[tuple[str, str], ...] = ()
    context_window: int | None = None
    max_output: int | None = None
    vision: bool | None = None
    # More names clients may ask for by name: listed by GET /v1/models, matched like
    # `match` (Claude Code's model picker keeps only names with "claude" in them).
    aliases: tuple[str, ...] = ()

    def matches(self, model: str) -> bool:
        """The glob or an alias (the model name)."""
        return fnmatch.fnmatchcase(model, self.match) or model in self.aliases

    def applies(self, traits: RequestTraits) -> bool:
        if not self.matches(traits.model):
            return False
        for condition in _YES_NO_CONDITIONS:
            wanted = getattr(self, condition)
            if wanted is not None and getattr(traits, condition) != wanted:
                return False
        if self.client is not None and traits.client != self.client:
            return False
        # Last: the only condition that may cost a token count.
        return self.long_context is None or traits.input_tokens > self.long_context

    @property
    def conditional(self) -> bool:
        """Whether anything but the glob decides if it applies."""
        return any(
            getattr(self, c) is not None for c in (*_YES_NO_CONDITIONS, "long_context", "client")
        )

    @property
    def chain(self) -> tuple[ChainLink, ...]:
        return (ChainLink(self.provider, self.model), *self.fallback)

    @cached_property
    def options(self) -> RouteOptions:
        # Every option is also a field of the route, by the same name. Made once per route,
        # not per request.
        return RouteOptions(**{f.name: getattr(self, f.name) for f in fields(RouteOptions)})


@dataclass(frozen=True)
class Attempt:
    """One upstream to try: the provider, the model name to send, the route's options."""

    provider: Provider
    model: str
    options: RouteOptions

    @property
    def max_tokens_limit(self) -> int | None:
        """The clamp: the model's output limit, the route's (its `max_tokens_limit`, else
        its `max_output`), else the provider's (the same two)."""
        options, provider = self.options, self.provider
        return (
            options.max_tokens_limit
            or options.max_output
            or provider.max_tokens_limit
            or provider.max_output
        )

    @property
    def vision(self) -> bool:
        """Whether the upstream reads images: the route's say, else the provider's."""
        return self.options.vision if self.options.vision is not None else self.provider.vision


@dataclass(frozen=True)
class RouteDecision:
    """The route a request takes: its attempts in order (the first is the primary)."""

    route: Route
    index: int | None  # position in settings.routes; None: the target provider's default
    attempts: tuple[Attempt, ...]
    requested_model: str

    @property
    def label(self) -> str:
        """How logs name the route."""
        if self.route.name:
            return self.route.name
        return f"routes[{self.index}]" if self.index is not None else "default"

    @property
    def reported_model(self) -> str:
        """The model name reported back to the client."""
        return self.route.spoof_model or self.requested_model


def decide(
    routes: Sequence[Route],
    default: Route | None,
    providers: Mapping[str, Provider],
    traits: RequestTraits,
) -> RouteDecision | None:
    """The first route that applies (else `default`), as attempts (None: nothing routes).
    A request with images whose route cannot read them (`vision`) takes the first
    ``images = true`` route that applies and can, when there is one."""
    chosen: tuple[int | None, Route] | None = next(
        ((i, r) for i, r in enumerate(routes) if r.applies(traits)), None
    )
    if chosen is None:
        if default is None or default.provider not in providers:
            return None
        chosen = (None, default)
    index, route = chosen
    if traits.images and not _reads_images(route, providers):
        # A text-only upstream: the first `images = true` route that can read them, if any.
        images = next(
            (
                (i, r)
                for i, r in enumerate(routes)
                if r.images is True and r.applies(traits) and _reads_images(r, providers)
            ),
            None,
        )
        if images is not None:
            index, route = images
    options = route.options
    attempts = tuple(
        Attempt(providers[t.provider], t.model or route.model or traits.model, options)
        for t in route.chain
    )
    return RouteDecision(route, index, attempts, traits.model)


def _reads_images(route: Route, providers: Mapping[str, Provider]) -> bool:
    if route.vision is not None:
        return route.vision
    provider = providers.get(route.provider)
    return provider is None or provider.vision


def should_fall_back(status: int | None) -> bool:
    """Whether a failure before the first byte moves on to the next attempt: a connect
    error or timeout (None), 429, or any 5xx (529 included)."""
    return status is None or status == 429 or status >= 500
