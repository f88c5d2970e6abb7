"""Google Gemini API (``generateContent`` / ``streamGenerateContent``) as an upstream protocol.

Pure translation, no I/O: `request.writer` (canonical Anthropic Messages request -> Gemini
request body, path and headers), `schema` (JSON schema -> the subset Gemini accepts),
`thought_signature` (Gemini ``thoughtSignature``s carried through clients as proxy-signed
thinking blocks), `response.reader` (non-streamed ``GenerateContentResponse`` -> Anthropic
Message), `decoder` (the ``streamGenerateContent?alt=sse`` stream -> canonical events,
twin of rust/src/gemini/), `mapping` (finish reasons and usage, shared with the stream
decoder), `errors` (Gemini HTTP error bodies -> the proxy's errors).
"""
