"""The OpenAI Responses API (`POST /v1/responses`), in and out.

Pure translation, no I/O:

- `request.reader`: a Responses request -> the canonical Anthropic Messages request
  (Codex CLI and other Responses clients on any upstream).
- `request.writer`: the canonical request -> a Responses request (the ``responses``
  provider kind: models that only serve the Responses API).
- `response.reader` / `response.writer`: non-streamed replies (Responses ``response`` ->
  Anthropic Message, and back).
- `items`: the pieces of a ``response`` the non-streamed writer and the stream encoder
  build alike (status, item ids, reasoning and call items, usage).
- `reasoning`: the carriers that keep thinking replayable with ``store: false``.
- `tools`: flattened namespace tool names and custom (free-form) tool input.
- `context`: what a response echoes of its request.
- `errors`: failures in the Responses error shapes.
- `chunk`, `decoder`, `encoder`, `output`: the stream, twins of rust/src/responses/.
"""
