"""The OpenAI Responses API (`POST /v1/responses`), in and out.

Pure translation, no I/O:

- `request_reader`: a Responses request -> the canonical Anthropic Messages request (Codex
  CLI and other Responses clients on any upstream).
- `request_writer`: the canonical request -> a Responses request (the ``responses``
  provider kind: models that only serve the Responses API).
- `response`: non-streamed replies both ways (Anthropic Message <-> Responses ``response``).
- `reasoning`: the carriers that keep thinking replayable with ``store: false``.
- `tools`: tool definitions, namespace flattening and custom (free-form) tools.
- `context`: what a response echoes of its request.
- `errors`: failures in the Responses error shapes.
"""
