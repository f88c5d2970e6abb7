"""OpenAI Chat Completions, in and out, in the layout every protocol has (docs/ARCHITECTURE.md,
"One layout per protocol"): `request.reader` / `request.writer`, `response.reader` /
`response.writer`, `mapping` (reasons and usage), and the stream (`chunk`, `decoder`,
`encoder`, `output`: twins of rust/src/chat/)."""
