"""Per-request bookkeeping: one usage record and one access-log line per model request.

The Exchange of a model request notes what it learns on the way: its route the decision
and the attempt that answered (server/pipeline/routing.py), its outcome the transducer, the
upstream's reply usage, the head and tail of passed-through bytes, what the client was
sent and the error type (server/pipeline/outcome.py); `close` turns that into the record, once,
whatever the outcome. Only the send wrappers run per chunk: one attribute test once the
first byte is out (`Outcome.watch`), the passthrough's tap, and `Relayed.add`.

Where the upstream gave no counts (it sends none, or the stream was cut before them), the
record counts what the client was sent, with the proxy's tokenizer, and the input at the
request's estimate, and says it is an estimate: a reply is never recorded as free because
its counts did not arrive.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ...tokens import Budget, text_tokens
from ...transducers import StreamTransducer
from ...usage.record import Tokens
from ...usage.service import UsageService
from ...usage.upstream_usage import (
    tokens_from_anthropic,
    tokens_from_chat,
    tokens_from_gemini,
    tokens_from_responses,
)
from .sessions import agent_id

if TYPE_CHECKING:
    from .exchange import Exchange, Message, Send
    from .outcome import Outcome, Relayed

# Passed-through bytes kept to read the usage from: Anthropic puts the input counts in the
# first event (message_start), every protocol its final counts in the last events.
HEAD_BYTES = 8 * 1024
TAIL_BYTES = 4 * 1024

_READERS: dict[str, Callable[[Mapping[str, Any]], Tokens]] = {
    "anthropic": tokens_from_anthropic,
    "chat": tokens_from_chat,
    "responses": tokens_from_responses,
    "gemini": tokens_from_gemini,
}
# Where a reply (or a streamed event) keeps its usage object.
_USAGE_KEYS: dict[str, str] = {"gemini": "usageMetadata"}


def reply_usage(upstream: str, reply: object) -> dict[str, Any] | None:
    """The usage object of an upstream's (non-streamed) JSON reply."""
    usage = reply.get(_USAGE_KEYS.get(upstream, "usage")) if isinstance(reply, dict) else None
    return usage if isinstance(usage, dict) else None


class Passthrough:
    """The first HEAD_BYTES and (at least) the last TAIL_BYTES of a forwarded body."""

    __slots__ = ("ended", "head", "size", "tail", "tail_size")

    def __init__(self) -> None:
        self.head = b""
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.size = 0
        self.ended = False

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[: HEAD_BYTES - len(self.head)]
        tail = self.tail
        tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size - len(tail[0]) >= TAIL_BYTES:
            self.tail_size -= len(tail.popleft())

    def body(self) -> bytes | None:
        """The whole body, when it was short enough to be kept whole."""
        if self.size <= HEAD_BYTES:
            return self.head
        return None

    def usage(self, upstream: str) -> Tokens | None:
        """The upstream's usage, read from the kept bytes (None: it reported none)."""
        reader = _READERS.get(upstream)
        if reader is None:
            return None
        key = _USAGE_KEYS.get(upstream, "usage")
        whole = self.body()
        if whole is not None:  # short: all of it
            if whole.lstrip()[:1] == b"{":
                return _json_usage(whole, reader, key)
            head = tail = whole
        else:
            head, tail = self.head, b"".join(self.tail)
            if b"data:" not in tail:
                return _json_usage_in(tail, reader, key)  # a long JSON body: its end
        if upstream == "responses":
            # The counts are in the last event, response.completed (or .incomplete), inside
            # the whole response it repeats, near its end: the last usage object of the tail
            # (however long the event is).
            return _json_usage_in(tail, reader, key)
        merged: dict[str, Any] = {}
        if upstream == "anthropic":  # the input counts: message_start, the first event
            start = _find_event(head.split(b"\n")[:8], b'"message_start"')
            message = start.get("message") if start else None
            if isinstance(message, dict) and isinstance(message.get("usage"), dict):
                merged.update(message["usage"])
        # The final counts: the last event with a usage object (only that one is parsed).
        last = _find_event(reversed(tail.split(b"\n")), b'"' + key.encode() + b'"', key=key)
        if last is not None:
            merged.update(last[key])
        return reader(merged) if merged else None


def _find_event(
    lines: Iterable[bytes], needle: bytes, *, key: str | None = None
) -> dict[str, Any] | None:
    """The first SSE data line of `lines` holding `needle` that parses as a JSON object
    (with an object under `key`, when given); a line cut by the tail's start does not parse."""
    for line in lines:
        if not line.startswith(b"data:") or needle not in line:
            continue
        try:
            value = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and (key is None or isinstance(value.get(key), dict)):
            return value
    return None


def _json_usage(
    body: bytes, reader: Callable[[Mapping[str, Any]], Tokens], key: str
) -> Tokens | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    usage = value.get(key) if isinstance(value, dict) else None
    return reader(usage) if isinstance(usage, dict) else None


def _json_usage_in(
    text: bytes, reader: Callable[[Mapping[str, Any]], Tokens], key: str
) -> Tokens | None:
    """The last `"<key>": {...}` object in a fragment of JSON (a `"usage": null` or a
    string "usage" is passed over)."""
    name = b'"' + key.encode() + b'"'
    at = len(text)
    while True:
        at = text.rfind(name, 0, at)
        if at < 0:
            return None
        rest = text[at + len(name) : at + len(name) + 16].lstrip()
        if rest[:1] == b":" and rest[1:].lstrip()[:1] == b"{":
            break
    start = text.find(b"{", at)
    end = _object_end(text, start) if start >= 0 else None
    if end is None:
        return None
    try:
        usage = orjson.loads(text[start:end])
    except orjson.JSONDecodeError:
        return None
    return reader(usage) if isinstance(usage, dict) else None


def _object_end(text: bytes, start: int) -> int | None:
    """Where the JSON object opening at `start` ends (past its closing brace; None: cut
    before it), its strings' braces passed over."""
    depth = 0
    in_string = False
    i = start
    while i < len(text):
        c = text[i]
        if in_string:
            if c == 0x5C:  # backslash
                i += 1
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c == 0x7B:
            depth += 1
        elif c == 0x7D:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


# Where each client protocol carries generated text: in a stream's events, in a whole reply.
_STREAM_TEXT: dict[str, frozenset[str]] = {
    "anthropic": frozenset({"text", "thinking", "partial_json"}),
    "chat": frozenset({"content", "reasoning_content", "refusal", "arguments"}),
    "responses": frozenset({"delta"}),  # its done events repeat the text: deltas only
    "gemini": frozenset({"text", "args"}),
}
_REPLY_TEXT: dict[str, frozenset[str]] = {
    "anthropic": frozenset({"text", "thinking", "input"}),
    "chat": frozenset({"content", "reasoning_content", "refusal", "arguments"}),
    "responses": frozenset({"text", "arguments", "summary"}),
    "gemini": frozenset({"text", "args"}),
}


def relayed_tokens(relayed: Relayed, protocol: str, streamed: bool) -> int:
    """The tokens of the text a client was sent (the proxy's tokenizer, bounded:
    tokens.Budget), scaled to all of it when only its start was kept."""
    data = b"".join(relayed.kept)
    texts: list[str] = []
    if streamed:
        keys = _STREAM_TEXT.get(protocol, frozenset())
        for line in data.split(b"\n"):
            if line.startswith(b"data:"):
                _texts(_loads(line[5:]), keys, texts)
    else:
        _texts(_loads(data), _REPLY_TEXT.get(protocol, frozenset()), texts)
    count = text_tokens("".join(texts), Budget())
    if relayed.size > relayed.kept_size and relayed.kept_size:
        count = count * relayed.size // relayed.kept_size
    return count


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _texts(value: Any, keys: frozenset[str], out: list[str]) -> None:
    """The strings under `keys` anywhere in `value` (an object there: its JSON text)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str):
                out.append(item)
            elif key in keys and isinstance(item, dict):
                out.append(orjson.dumps(item).decode())
            elif isinstance(item, dict | list):
                _texts(item, keys, out)
    elif isinstance(value, list):
        for item in value:
            _texts(item, keys, out)


def tap(exchange: Exchange, send: Send, strip: Callable[[bytes], bytes] | None = None) -> Send:
    """`send`, keeping the head and tail of a forwarded body; `strip`: what of the body
    the client does not get (it is kept here: the usage the proxy asked for itself)."""
    kept = Passthrough()
    exchange.outcome.forwarding(kept)

    def tapped(message: Message) -> Awaitable[None]:
        body = message.get("body")
        if body:
            kept.add(body)
            if strip is not None:
                message = {**message, "body": strip(body)}
        if message["type"] == "http.response.body" and not message.get("more_body"):
            kept.ended = True
        return send(message)

    return tapped


def note_reply(exchange: Exchange, reply: object) -> None:
    """The upstream's non-streamed JSON reply: its usage object is kept."""
    attempt = exchange.route.attempt
    exchange.outcome.replied(None if attempt is None else reply_usage(attempt.provider.kind, reply))


def built_by(exchange: Exchange, make: Callable[[], StreamTransducer]) -> StreamTransducer:
    """Builds a relay's transducer and notes it (and its input estimate: its usage before
    any event)."""
    transducer = make()
    exchange.outcome.relaying(transducer)
    return transducer


def tokens(exchange: Exchange) -> tuple[Tokens, bool]:
    """The request's counts in the record's conventions, and whether they are an estimate:
    the upstream's, else (it reported none, or the stream was cut before the end) at least
    what the client was sent, and the input at the request's estimate."""
    counts, estimated = _reported(exchange)
    if not estimated:
        return counts, False
    relayed = exchange.outcome.relayed
    protocol = exchange.protocol
    asked = exchange.asked
    if relayed is not None and relayed.size and protocol is not None:
        output = relayed_tokens(relayed, protocol, asked is not None and asked.stream)
        if output > counts.output:
            counts = counts._replace(output=output)
    if counts.input == 0 and counts.cache_read == 0 and asked is not None:
        counts = counts._replace(input=asked.traits.input_tokens)
    return counts, True


def _reported(exchange: Exchange) -> tuple[Tokens, bool]:
    """The upstream's counts, and whether they may fall short (none reported, or cut)."""
    outcome = exchange.outcome
    transducer = outcome.transducer
    attempt = exchange.route.attempt
    if transducer is not None:
        first, cached, output = transducer.usage
        reasoning = transducer.reasoning_tokens
        if exchange.protocol == "anthropic":  # Anthropic conventions already
            reported = not (first == outcome.estimate and cached == 0 and output == 0)
            counts = Tokens(first, output, cached, 0, reasoning)
        else:  # Chat conventions: the prompt includes the cached tokens
            reported = first > 0 or output > 0
            counts = Tokens(first - cached, output, cached, 0, reasoning)
        return counts, not (reported and transducer.complete)
    if attempt is None:
        return Tokens(), False
    upstream = attempt.provider.kind
    reader = _READERS.get(upstream)
    if outcome.reply_usage is not None and reader is not None:
        return reader(outcome.reply_usage), False
    if outcome.passthrough is not None:
        found = outcome.passthrough.usage(upstream)
        if found is not None:
            return found, not outcome.passthrough.ended
        return Tokens(), True
    return Tokens(), outcome.error_type is None


def close(exchange: Exchange, usage: UsageService | None) -> dict[str, object]:
    """Record the request; returns the access-log details."""
    protocol = exchange.protocol
    assert protocol is not None
    now = time.monotonic()
    outcome = exchange.outcome
    status = outcome.status
    # An error answered before the reply started: nothing was generated or billed.
    counts, estimated = tokens(exchange) if status < 400 else (Tokens(), False)
    outcome.counted(counts)
    decision = exchange.route.decision
    attempt = exchange.route.attempt if decision is not None else None
    routed = decision is not None and attempt is not None
    stream = routed and exchange.asked is not None and exchange.asked.stream
    error_type = _error_type(outcome)
    agent = agent_id(exchange.header)
    details = _details(exchange, counts, estimated, error_type, agent)
    if usage is None:
        return details
    member = exchange.caller.member
    first_byte = outcome.first_byte
    usage.finish(
        usage.make_record(
            time=exchange.started_wall,
            request_id=exchange.request_id,
            protocol=protocol,
            # A request refused after routing keeps what it asked for; only an attempt
            # names a provider and an upstream model.
            route=decision.route.match if decision else "",
            provider=attempt.provider.name if decision and attempt else "",
            requested_model=decision.requested_model if decision else "",
            target_model=attempt.model if decision and attempt else "",
            tokens=counts,
            estimated=estimated,
            latency_ms=(now - exchange.started) * 1000,
            ttfb_ms=None if first_byte is None else (first_byte - exchange.started) * 1000,
            status=status,
            error_type=error_type,
            key=exchange.caller.client_key,
            stream=stream,
            key_name=member.key.name if member is not None else None,
            team=member.key.team if member is not None else None,
            agent=agent,
            refusal=outcome.refusal,
        )
    )
    return details


def _error_type(outcome: Outcome) -> str | None:
    """The error the record names: the answer's own, else a relay's (its stream's error, or
    ``client_gone`` when it did not complete), else ``api_error`` for an error status."""
    error_type = outcome.error_type
    transducer = outcome.transducer
    if transducer is not None and error_type is None:
        if transducer.error is not None:
            return transducer.error[0]
        if not transducer.complete:
            return "client_gone"
    elif outcome.status >= 400 and error_type is None:
        return "api_error"
    return error_type


def _details(
    exchange: Exchange, counts: Tokens, estimated: bool, error_type: str | None, agent: str | None
) -> dict[str, object]:
    """The access-log details of a model request's record."""
    details: dict[str, object] = {}
    if agent is not None:
        details["agent"] = agent
    decision, attempt = exchange.route.decision, exchange.route.attempt
    if decision is not None and attempt is not None:
        details["model"] = decision.requested_model
        details["provider"] = attempt.provider.name
        if exchange.asked is not None and exchange.asked.stream:
            details["stream"] = 1
    details["in"] = counts.input
    details["out"] = counts.output
    if counts.cache_read:
        details["cache_read"] = counts.cache_read
    if counts.cache_write:
        details["cache_write"] = counts.cache_write
    if counts.reasoning:
        details["reasoning"] = counts.reasoning
    if estimated:
        details["estimated"] = 1
    outcome = exchange.outcome
    if outcome.refusal is not None:
        details["refusal"] = outcome.refusal
    transducer = outcome.transducer
    if transducer is not None and transducer.stop_reason is not None:
        details["stop"] = transducer.stop_reason
    if error_type is not None:
        details["error"] = error_type
    return details
