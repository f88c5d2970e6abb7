"""Reasoning replay: restoring thinking blocks from continuation suffixes (`continuation`).

``reasoning_content`` (else the ``reasoning`` alias) and the text of ``content`` are
searched for suffixes. Every suffix that verifies with `MessagesTarget.continuation_key`
restores its ``thinking`` / ``redacted_thinking`` blocks, in order, FIRST in the assistant
content (those from ``reasoning_content`` before those from ``content``; the same blocks
replayed in both places are restored once); the reasoning text it covers and the suffix
itself are removed, and in ``content`` the whitespace that joined them to the visible text
is trimmed (text left on both sides of a removed span is joined with a blank line).

Anything that does not verify is never turned into a thinking block: plain reasoning in
``reasoning_content`` is dropped (never forwarded as text); a suffix marker that does not
verify (tampered, another key, edited reasoning, or any marker when no key is configured)
is cut out (just the marker: the reasoning text before it cannot be told apart reliably
from the visible text, so in ``content`` it stays). Either case marks the message
`Replay.skipped` (counted in `Translation.skipped_reasoning`) and logs at debug level on
``hydra_proxy.continuation`` (lengths only, never the text). Plain reasoning that Zed
replays as ``content`` without any suffix cannot be recognised at all and is forwarded as
the assistant's text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .... import continuation
from ....canonical.content import Block

__all__ = ["Replay", "restore_from_content", "restore_from_reasoning"]

trace = logging.getLogger("hydra_proxy.continuation")


@dataclass(slots=True)
class Replay:
    """What one assistant message's replayed reasoning restores."""

    blocks: list[Block] = field(default_factory=list)  # thinking/redacted blocks, in order
    skipped: bool = False  # reasoning or a suffix marker that did not verify


def restore_from_reasoning(reasoning: str, key: bytes | None, where: str) -> Replay:
    """The blocks the suffixes in `reasoning` (the message's `where` field) restore."""
    scan = _scan(reasoning, key)
    replay = Replay(_anthropic_blocks(scan.blocks))
    rest = "".join(reasoning[a:b] for a, b in _gaps(scan.spans, len(reasoning)))
    if scan.broken or rest.strip():
        replay.skipped = True
        trace.debug(
            "%s: %d characters of reasoning without a valid continuation "
            "suffix (%d broken suffix(es)) dropped",
            where,
            len(rest),
            scan.broken,
        )
    return replay


def restore_from_content(
    texts: list[tuple[str, str]], key: bytes | None, path: str, replay: Replay
) -> list[tuple[str, str]]:
    """Add to `replay` what the suffixes in the (text, path) pieces of message `path`'s
    content restore; the pieces without the suffixes and the reasoning they cover."""
    joined = "".join(text for text, _ in texts)
    if continuation.PREFIX not in joined:
        return texts
    scan = _scan(joined, key)
    # The same blocks replayed both ways (reasoning_content and content) count once.
    from_content = _anthropic_blocks(scan.blocks)
    if from_content != replay.blocks:
        replay.blocks.extend(from_content)
    if scan.broken:
        replay.skipped = True
        trace.debug(
            "%s.content: %d continuation suffix(es) that do not verify removed",
            path,
            scan.broken,
        )
    return _cut(texts, scan.spans)


@dataclass(slots=True)
class _Scan:
    blocks: list[continuation.Block] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    broken: int = 0


def _scan(text: str, key: bytes | None) -> _Scan:
    """Every continuation suffix in `text`: verified blocks, the spans to cut, broken ones."""
    scan = _Scan()
    for item in continuation.scan(text, key):  # linear, however many markers
        if isinstance(item, continuation.VerifiedSuffix):
            scan.blocks.extend(item.blocks)
            scan.spans.append((item.start, item.end))
        else:
            scan.spans.append(item)
            scan.broken += 1
    return scan


def _anthropic_blocks(blocks: list[continuation.Block]) -> list[Block]:
    out: list[Block] = []
    for block in blocks:
        if isinstance(block, continuation.ThinkingBlock):
            out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
        else:
            out.append({"type": "redacted_thinking", "data": block.data})
    return out


def _gaps(spans: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """The ranges of [0, length) outside the (sorted, disjoint) spans."""
    gaps = []
    pos = 0
    for start, end in spans:
        if start > pos:
            gaps.append((pos, start))
        pos = max(pos, end)
    if pos < length:
        gaps.append((pos, length))
    return gaps


def _cut(texts: list[tuple[str, str]], spans: list[tuple[int, int]]) -> list[tuple[str, str]]:
    """Remove the spans (offsets into the concatenated texts) from the pieces; the text right
    after a removed span loses its leading whitespace, right before one its trailing, and
    what is left on both sides of a span inside one piece is joined with a blank line."""
    if not spans:
        return texts
    starts = {start for start, _ in spans}
    ends = {end for _, end in spans}
    total = sum(len(text) for text, _ in texts)
    gaps = _gaps(spans, total)
    out: list[tuple[str, str]] = []
    offset = 0
    for text, path in texts:
        lo, hi = offset, offset + len(text)
        offset = hi
        pieces = []
        for start, end in gaps:
            a, b = max(start, lo), min(end, hi)
            if a >= b:
                continue
            piece = text[a - lo : b - lo]
            if a == start and start in ends:
                piece = piece.lstrip()
            if b == end and end in starts:
                piece = piece.rstrip()
            pieces.append(piece)
        out.append(("\n\n".join(p for p in pieces if p), path))
    return out
