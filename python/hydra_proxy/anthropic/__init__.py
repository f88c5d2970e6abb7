"""Anthropic Messages, in and out, in the layout every protocol has (docs/ARCHITECTURE.md,
"One layout per protocol"): `request.reader` / `request.writer`, `response.reader` /
`response.writer`, and the stream (`chunk`, `decoder`, `encoder`, `output`: twins of
rust/src/anthropic/)."""
