"""The canonical request: an Anthropic Messages request, as a dict.

Every client protocol has a reader (its request -> canonical) and every upstream protocol
a writer (canonical -> its request); no code is written per pair of protocols. This
package holds what they share, so each protocol is a leaf on it:

Fields of both directions
  `fields` (the 400 naming a field, type checks), `target` (`MessagesTarget`: what a
  reader writes for), `tools` (ids, names, schemas, tool choice, server tools),
  `thinking` (efforts and budgets), `params` (limits, sampling, output format, user id),
  `arguments` (tool call arguments <-> ``tool_use`` input).
Readers write
  `media` (images and files by URL or as data), `turns` (the conversation as turns, calls
  linked to their answers, and the rules of their order), `request` (`canonical_request`:
  the rules that tie the fields together).
Writers read
  `content` (content blocks), `conversation` (the system text and the turns in order),
  `parts` (user content and tool results, written with a protocol's leaves).
Non-streamed replies
  `message` (the canonical reply, an Anthropic Message).

Pure translation, no I/O.
"""
